#include "args.hpp"

#include <sstream>
#include <stdexcept>

namespace attnkit::cli {

Args::Args(std::string command, std::string summary, std::vector<OptionSpec> specs)
    : command_(std::move(command)), summary_(std::move(summary)), specs_(std::move(specs)) {}

const OptionSpec* Args::find(const std::string& name) const {
  for (const auto& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

void Args::parse(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      help_ = true;
      continue;
    }
    if (a.rfind("--", 0) != 0)
      throw std::runtime_error("unexpected argument '" + a +
                               "' (options start with --; see --help)");
    std::string name = a.substr(2), value;
    const auto eq = name.find('=');
    bool has_value = false;
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const OptionSpec* spec = find(name);
    if (!spec) {
      std::string known;
      for (const auto& s : specs_)
        known += " --" + s.name;
      throw std::runtime_error("unknown option --" + name + " for '" + command_ +
                               "'; known:" + known);
    }
    if (spec->value_hint.empty()) {
      values_[name] = has_value ? value : "1";
    } else {
      if (!has_value) {
        if (i + 1 >= argc)
          throw std::runtime_error("--" + name + " needs a value (" + spec->value_hint + ")");
        value = argv[++i];
      }
      values_[name] = value;
    }
  }
}

std::string Args::usage() const {
  std::ostringstream os;
  os << "usage: attnkit " << command_ << " [options]\n\n" << summary_ << "\n\noptions:\n";
  for (const auto& s : specs_) {
    std::string left = "  --" + s.name + (s.value_hint.empty() ? "" : " " + s.value_hint);
    os << left << std::string(left.size() < 30 ? 30 - left.size() : 2, ' ') << s.help;
    if (!s.default_value.empty()) os << " (default: " << s.default_value << ")";
    os << "\n";
  }
  os << "  -h, --help                  this help\n";
  return os.str();
}

bool Args::flag(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() && it->second != "0" && it->second != "false";
}

std::string Args::str(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  const OptionSpec* s = find(name);
  return s ? s->default_value : std::string();
}

long long Args::integer(const std::string& name) const {
  const std::string v = str(name);
  try {
    size_t pos = 0;
    long long r = std::stoll(v, &pos);
    if (pos != v.size()) throw std::invalid_argument("trailing");
    return r;
  } catch (const std::exception&) {
    throw std::runtime_error("--" + name + " = '" + v + "', expected an integer");
  }
}

double Args::real(const std::string& name) const {
  const std::string v = str(name);
  try {
    size_t pos = 0;
    double r = std::stod(v, &pos);
    if (pos != v.size()) throw std::invalid_argument("trailing");
    return r;
  } catch (const std::exception&) {
    throw std::runtime_error("--" + name + " = '" + v + "', expected a number");
  }
}

std::vector<std::string> Args::str_list(const std::string& name) const {
  std::vector<std::string> out;
  std::stringstream ss(str(name));
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<long long> Args::int_list(const std::string& name) const {
  std::vector<long long> out;
  for (const auto& s : str_list(name)) {
    long long mult = 1;
    std::string t = s;
    if (!t.empty() && (t.back() == 'k' || t.back() == 'K')) {
      mult = 1024;
      t.pop_back();
    }
    try {
      out.push_back(std::stoll(t) * mult);
    } catch (const std::exception&) {
      throw std::runtime_error("--" + name + ": '" + s + "' is not an integer (e.g. 512,1k,2048)");
    }
  }
  return out;
}

}  // namespace attnkit::cli
