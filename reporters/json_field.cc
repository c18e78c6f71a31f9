#include "reporters/json_field.h"

#include <cmath>

#include "engine/common/error.h"

namespace shardbench {
namespace {

// "a string", "an object", "null": what was found, in the words of the expectation.
std::string Found(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_float: return "a number (" + v.dump() + ")";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer (" + v.dump() + ")";
    default: return std::string("a ") + v.type_name();
  }
}

std::string Member(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

}  // namespace

JsonField::JsonField(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

void JsonField::Fail(const std::string& expected) const {
  throw InputError(file_ + ": field \"" + (path_.empty() ? "(top level)" : path_) + "\": expected " + expected + ", found " +
                   Found(*value_));
}

const nlohmann::json& JsonField::Object() const {
  if (!value_->is_object()) Fail("an object");
  return *value_;
}

std::optional<JsonField> JsonField::Optional(const std::string& key) const {
  const auto it = Object().find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonField(*it, file_, Member(path_, key));
}

std::optional<JsonField> JsonField::OptionalNonNull(const std::string& key) const {
  auto f = Optional(key);
  if (f && f->json().is_null()) return std::nullopt;
  return f;
}

JsonField JsonField::Required(const std::string& key) const {
  if (auto f = Optional(key)) return *f;
  throw InputError(file_ + ": field \"" + Member(path_, key) + "\" is missing");
}

std::vector<std::pair<std::string, JsonField>> JsonField::Members() const {
  std::vector<std::pair<std::string, JsonField>> out;
  for (auto it = Object().begin(); it != value_->end(); ++it) out.emplace_back(it.key(), JsonField(it.value(), file_, Member(path_, it.key())));
  return out;
}

std::vector<JsonField> JsonField::Elements() const {
  if (!value_->is_array()) Fail("an array");
  std::vector<JsonField> out;
  for (size_t i = 0; i < value_->size(); ++i) out.emplace_back((*value_)[i], file_, path_ + "[" + std::to_string(i) + "]");
  return out;
}

std::string JsonField::String() const {
  if (!value_->is_string()) Fail("a string");
  return value_->get<std::string>();
}

std::string JsonField::OneOf(const std::vector<std::string>& allowed) const {
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : " or ") + ("\"" + a + "\"");
  if (!value_->is_string()) Fail(list);
  const std::string s = value_->get<std::string>();
  for (const auto& a : allowed) {
    if (s == a) return s;
  }
  throw InputError(file_ + ": field \"" + path_ + "\": expected " + list + ", found \"" + s + "\"");
}

bool JsonField::Bool() const {
  if (!value_->is_boolean()) Fail("a boolean");
  return value_->get<bool>();
}

int64_t JsonField::Integer() const {
  if (value_->is_number_unsigned() && value_->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) Fail("an integer below 2^63");
  if (!value_->is_number_integer()) Fail("an integer");
  return value_->get<int64_t>();
}

int64_t JsonField::NonNegativeInteger() const {
  if (!value_->is_number_integer() || value_->get<int64_t>() < 0) Fail("a non-negative integer");
  return Integer();
}

double JsonField::Number() const {
  if (!value_->is_number()) Fail("a number");
  return value_->get<double>();
}

double JsonField::NumberOrNaN() const {
  if (value_->is_null()) return std::nan("");
  if (!value_->is_number()) Fail("a number");
  return value_->get<double>();
}

std::vector<double> JsonField::NumbersOrNaN() const {
  std::vector<double> out;
  for (const auto& e : Elements()) out.push_back(e.NumberOrNaN());
  return out;
}

}  // namespace shardbench
