// A value inside a JSON document together with where it sits (the file and the field path),
// read with checked types. Reports read results that other builds, other tools (the peer
// engine) or people wrote: a wrong type or a missing field must be bad input (exit 2) naming
// the file and the field, never nlohmann's type_error escaping as an internal error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardbench {

class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string file, std::string path = "");

  const nlohmann::json& json() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

  // Members of an object (an error when this is not one).
  JsonField Required(const std::string& key) const;
  std::optional<JsonField> Optional(const std::string& key) const;         // absent: nullopt
  std::optional<JsonField> OptionalNonNull(const std::string& key) const;  // absent or null: nullopt
  std::vector<std::pair<std::string, JsonField>> Members() const;
  // Elements of an array (an error when this is not one).
  std::vector<JsonField> Elements() const;
  // The same value reported under another path (a metric by its name rather than its index).
  JsonField At(std::string path) const { return JsonField(*value_, file_, std::move(path)); }

  std::string String() const;
  std::string OneOf(const std::vector<std::string>& allowed) const;  // a string from a closed set
  bool Bool() const;
  int64_t Integer() const;
  int64_t NonNegativeInteger() const;
  double Number() const;
  // A number, or null read as NaN: writers turn non-finite numbers into null (JSON has none).
  double NumberOrNaN() const;
  std::vector<double> NumbersOrNaN() const;
  const nlohmann::json& Object() const;  // checked to be an object, returned as written

  // InputError "FILE: field "PATH": expected WHAT, found a string".
  [[noreturn]] void Fail(const std::string& expected) const;

 private:
  const nlohmann::json* value_;
  std::string file_, path_;
};

}  // namespace shardbench
