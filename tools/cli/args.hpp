// A small command-line parser: `--name value`, `--name=value` and boolean `--flag`. Unknown
// options are errors that list the known ones; every command has --help.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnkit::cli {

struct OptionSpec {
  std::string name;        // without dashes
  std::string value_hint;  // "" = boolean flag
  std::string help;
  std::string default_value;
};

class Args {
 public:
  Args(std::string command, std::string summary, std::vector<OptionSpec> specs);
  /// Parses argv[first..]; throws std::runtime_error with a readable message on bad input.
  void parse(int argc, char** argv, int first);
  bool help() const { return help_; }
  std::string usage() const;

  bool flag(const std::string& name) const;
  std::string str(const std::string& name) const;  // value or default
  long long integer(const std::string& name) const;
  double real(const std::string& name) const;
  bool given(const std::string& name) const { return values_.count(name) > 0; }
  /// Comma-separated list of integers ("512,1024").
  std::vector<long long> int_list(const std::string& name) const;
  std::vector<std::string> str_list(const std::string& name) const;

 private:
  const OptionSpec* find(const std::string& name) const;
  std::string command_, summary_;
  std::vector<OptionSpec> specs_;
  std::map<std::string, std::string> values_;
  bool help_ = false;
};

}  // namespace attnkit::cli
