#include "common/case_printing.hpp"

namespace attnkit::check {

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name();
}

}  // namespace attnkit::check
