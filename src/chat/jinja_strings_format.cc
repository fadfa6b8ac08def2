// Python's two string formatting languages for chat templates (declared in jinja_strings.h):
// printf-style `fmt % args` (PercentFormat) and str.format (BraceFormat) with the format-spec
// subset [[fill]align][sign][#][0][width][,][.precision][type], sharing one number formatter
// for the d/x/X/o/f/F/e/E/g/G conversions. Output is bounded by max_bytes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "chat/jinja_strings.h"

namespace jisu::jinja {

namespace {

std::string FormatC(const char* fmt, double d) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), fmt, d);
  return buf;
}

// Formats a number for %-style and {}-style conversions of type d/x/X/o/f/F/e/E/g/G.
Result<std::string> FormatNumber(const Value& v, char type, int precision, bool alt,
                                 const char* conv_name) {
  if (!v.is_number()) {
    return Status::InvalidArgument(std::string("%") + conv_name +
                                   " format: a real number is required, not " + TypeName(v));
  }
  char buf[512];
  switch (type) {
    case 'd': {
      if (v.is_float()) {
        double d = v.f();
        if (!std::isfinite(d)) return Status::InvalidArgument("cannot convert float to integer");
        std::snprintf(buf, sizeof(buf), "%.0f", std::trunc(d));
        return std::string(buf);
      }
      return std::to_string(v.i());
    }
    case 'x':
    case 'X':
    case 'o': {
      if (v.is_float()) {
        return Status::InvalidArgument(std::string("%") + type +
                                       " format: an integer is required, not float");
      }
      int64_t i = v.i();
      uint64_t mag = i < 0 ? uint64_t(0) - uint64_t(i) : uint64_t(i);
      std::snprintf(buf, sizeof(buf), type == 'x' ? "%llx" : (type == 'X' ? "%llX" : "%llo"),
                    static_cast<unsigned long long>(mag));
      std::string digits = buf;
      std::string prefix = alt ? (type == 'o' ? "0o" : (type == 'x' ? "0x" : "0X")) : "";
      return (i < 0 ? "-" : "") + prefix + digits;
    }
    default: {
      double d = v.f();
      if (std::isnan(d)) return std::string(type >= 'a' ? "nan" : "NAN");
      if (std::isinf(d)) return std::string(d > 0 ? "" : "-") + (type >= 'a' ? "inf" : "INF");
      if (precision < 0) precision = 6;
      precision = std::min(precision, 100);
      std::string fmt =
          std::string("%") + (alt ? "#" : "") + "." + std::to_string(precision) + type;
      return FormatC(fmt.c_str(), d);
    }
  }
}

// Applies sign flags and width padding to a formatted number.
std::string PadNumber(std::string num, bool plus, bool space, bool zero, bool left, int64_t width) {
  bool neg = !num.empty() && num[0] == '-';
  std::string sign = neg ? "-" : (plus ? "+" : (space ? " " : ""));
  std::string body = neg ? num.substr(1) : num;
  int64_t len = int64_t(sign.size() + body.size());
  if (width <= len) return sign + body;
  std::string pad(size_t(width - len), zero && !left ? '0' : ' ');
  if (left) return sign + body + pad;
  if (zero) return sign + pad + body;
  return pad + sign + body;
}

}  // namespace

Result<std::string> PercentFormat(const std::string& fmt, const Value& args, size_t max_bytes) {
  std::vector<Value> list;
  const Dict* mapping = nullptr;
  if (args.is_tuple()) {
    list = args.list();
  } else if (args.is_dict()) {
    mapping = &args.dict();
    list.push_back(args);
  } else {
    list.push_back(args);
  }
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  size_t i = 0, n = fmt.size();
  while (i < n) {
    char c = fmt[i];
    if (c != '%') {
      out.push_back(c);
      ++i;
      continue;
    }
    ++i;
    if (i >= n) return Status::InvalidArgument("incomplete format");
    const Value* arg = nullptr;
    if (fmt[i] == '(') {
      if (!mapping) return Status::InvalidArgument("format requires a mapping");
      size_t close = fmt.find(')', i);
      if (close == std::string::npos) return Status::InvalidArgument("incomplete format key");
      std::string key = fmt.substr(i + 1, close - i - 1);
      arg = mapping->FindStr(key);
      if (!arg) return Status::InvalidArgument("KeyError: '" + key + "'");
      used_mapping = true;
      i = close + 1;
    }
    bool left = false, plus = false, space = false, alt = false, zero = false;
    while (i < n && std::strchr("-+ #0", fmt[i]) != nullptr && fmt[i] != 0) {
      switch (fmt[i]) {
        case '-':
          left = true;
          break;
        case '+':
          plus = true;
          break;
        case ' ':
          space = true;
          break;
        case '#':
          alt = true;
          break;
        case '0':
          zero = true;
          break;
      }
      ++i;
    }
    auto take_arg = [&]() -> Result<Value> {
      if (next >= list.size() || (mapping && !args.is_tuple())) {
        if (mapping && next == 0) {
          ++next;
          return list[0];
        }
        return Status::InvalidArgument("not enough arguments for format string");
      }
      return list[next++];
    };
    int64_t width = 0;
    if (i < n && fmt[i] == '*') {
      JISU_ASSIGN_OR_RETURN(Value w, take_arg());
      if (!w.is_integral()) return Status::InvalidArgument("* wants int");
      width = w.i();
      if (width < 0) {
        left = true;
        width = -width;
      }
      ++i;
    } else {
      while (i < n && fmt[i] >= '0' && fmt[i] <= '9') {
        width = width * 10 + (fmt[i] - '0');
        if (width > int64_t(max_bytes)) return Status::ResourceExhausted("format width too large");
        ++i;
      }
    }
    int precision = -1;
    if (i < n && fmt[i] == '.') {
      ++i;
      precision = 0;
      while (i < n && fmt[i] >= '0' && fmt[i] <= '9') {
        precision = std::min(precision * 10 + (fmt[i] - '0'), 1 << 20);
        ++i;
      }
    }
    while (i < n && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= n) return Status::InvalidArgument("incomplete format");
    char conv = fmt[i++];
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    Value v;
    if (arg) {
      v = *arg;
    } else {
      JISU_ASSIGN_OR_RETURN(v, take_arg());
    }
    std::string piece;
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        piece = conv == 's' ? Str(v) : Repr(v);
        if (precision >= 0) {
          std::vector<uint32_t> cps = ToCodePoints(piece);
          if (size_t(precision) < cps.size()) piece = FromCodePoints(cps, 0, size_t(precision));
        }
        piece = PyPad(piece, width, ' ', left ? '<' : '>');
        break;
      }
      case 'c': {
        if (v.is_string() && CodePointCount(v.s()) == 1) {
          piece = v.s();
        } else if (v.is_integral() && v.i() >= 0 && v.i() <= 0x10FFFF) {
          AppendUtf8(uint32_t(v.i()), &piece);
        } else {
          return Status::InvalidArgument("%c requires int or char");
        }
        piece = PyPad(piece, width, ' ', left ? '<' : '>');
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o':
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G': {
        char type = (conv == 'i' || conv == 'u') ? 'd' : conv;
        std::string name(1, conv);
        JISU_ASSIGN_OR_RETURN(std::string num, FormatNumber(v, type, precision, alt, name.c_str()));
        if ((type == 'd') && precision > 0) {
          bool neg = num[0] == '-';
          std::string digits = neg ? num.substr(1) : num;
          if (int64_t(digits.size()) < precision) {
            digits = std::string(size_t(precision) - digits.size(), '0') + digits;
          }
          num = (neg ? "-" : "") + digits;
        }
        piece = PadNumber(num, plus, space, zero, left, width);
        break;
      }
      default:
        return Status::InvalidArgument(std::string("unsupported format character '") + conv + "'");
    }
    out += piece;
    if (out.size() > max_bytes) return Status::ResourceExhausted("format: result too large");
  }
  if (!mapping && next < list.size()) {
    return Status::InvalidArgument("not all arguments converted during string formatting");
  }
  (void)used_mapping;
  return out;
}

namespace {

// format(value, spec) for the spec subset [[fill]align][sign][#][0][width][,][.precision][type].
Result<std::string> ApplySpec(const Value& v, const std::string& spec, size_t max_bytes) {
  if (spec.empty()) return Str(v);
  std::vector<uint32_t> cps = ToCodePoints(spec);
  size_t i = 0;
  uint32_t fill = ' ';
  char align = 0;
  auto is_align = [](uint32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (cps.size() >= 2 && is_align(cps[1])) {
    fill = cps[0];
    align = char(cps[1]);
    i = 2;
  } else if (!cps.empty() && is_align(cps[0])) {
    align = char(cps[0]);
    i = 1;
  }
  char sign = 0;
  if (i < cps.size() && (cps[i] == '+' || cps[i] == '-' || cps[i] == ' ')) sign = char(cps[i++]);
  bool alt = false;
  if (i < cps.size() && cps[i] == '#') {
    alt = true;
    ++i;
  }
  if (i < cps.size() && cps[i] == '0') {
    if (!align) {
      fill = '0';
      align = '=';
    }
    ++i;
  }
  int64_t width = 0;
  while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9') {
    width = width * 10 + (cps[i++] - '0');
    if (width > int64_t(max_bytes)) return Status::ResourceExhausted("format width too large");
  }
  bool grouping = false;
  if (i < cps.size() && (cps[i] == ',' || cps[i] == '_')) {
    grouping = true;
    ++i;
  }
  int precision = -1;
  if (i < cps.size() && cps[i] == '.') {
    ++i;
    precision = 0;
    while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9') {
      precision = std::min(precision * 10 + int(cps[i++] - '0'), 1 << 20);
    }
  }
  char type = 0;
  if (i < cps.size()) type = char(cps[i++]);
  if (i != cps.size()) return Status::InvalidArgument("Invalid format specifier");
  std::string body;
  bool numeric = false;
  if (v.is_string() || v.is_none() || v.is_undefined() || v.is_sequence() || v.is_dict()) {
    if (type != 0 && type != 's') {
      return Status::InvalidArgument(std::string("Unknown format code '") + type +
                                     "' for object of type '" + TypeName(v) + "'");
    }
    if (!v.is_string() && !v.is_undefined()) {
      return Status::InvalidArgument("unsupported format string passed to " + TypeName(v) +
                                     ".__format__");
    }
    body = Str(v);
    if (precision >= 0) {
      std::vector<uint32_t> b = ToCodePoints(body);
      if (size_t(precision) < b.size()) body = FromCodePoints(b, 0, size_t(precision));
    }
    if (!align) align = '<';
  } else {
    numeric = true;
    char t = type;
    if (t == 0) t = v.is_float() ? (precision >= 0 ? 'g' : 0) : 'd';
    if (t == 'n') t = v.is_float() ? 'g' : 'd';
    if (t == 0) {
      body = Str(v);
    } else if (t == '%') {
      JISU_ASSIGN_OR_RETURN(body,
                            FormatNumber(Value::Float(v.f() * 100), 'f', precision, alt, "%"));
      body += "%";
    } else if (t == 'b') {
      if (v.is_float()) return Status::InvalidArgument("Unknown format code 'b' for float");
      int64_t x = v.i();
      uint64_t mag = x < 0 ? uint64_t(0) - uint64_t(x) : uint64_t(x);
      std::string digits;
      do {
        digits.push_back(char('0' + (mag & 1)));
        mag >>= 1;
      } while (mag);
      std::reverse(digits.begin(), digits.end());
      body = (x < 0 ? "-" : "") + std::string(alt ? "0b" : "") + digits;
    } else if (std::strchr("dxXoeEfFgG", t) != nullptr) {
      if (t == 'd' && v.is_float()) {
        return Status::InvalidArgument("Unknown format code 'd' for object of type 'float'");
      }
      JISU_ASSIGN_OR_RETURN(body, FormatNumber(v, t, precision, alt, "format"));
    } else {
      return Status::InvalidArgument(std::string("Unknown format code '") + t + "'");
    }
    if (grouping) {
      bool neg = !body.empty() && body[0] == '-';
      size_t start = neg ? 1 : 0;
      size_t end = start;
      while (end < body.size() && body[end] >= '0' && body[end] <= '9') ++end;
      std::string digits = body.substr(start, end - start);
      std::string grouped;
      for (size_t k = 0; k < digits.size(); ++k) {
        if (k && (digits.size() - k) % 3 == 0) grouped.push_back(',');
        grouped.push_back(digits[k]);
      }
      body = body.substr(0, start) + grouped + body.substr(end);
    }
    if (sign == '+' && body[0] != '-') body = "+" + body;
    if (sign == ' ' && body[0] != '-') body = " " + body;
    if (!align) align = '>';
  }
  if (align == '=' && numeric) {
    int64_t len = int64_t(CodePointCount(body));
    if (width > len) {
      size_t signlen =
          (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
      std::string f;
      AppendUtf8(fill, &f);
      std::string pad;
      for (int64_t k = 0; k < width - len; ++k) pad += f;
      body = body.substr(0, signlen) + pad + body.substr(signlen);
    }
    return body;
  }
  if (align == '=') align = '<';
  return PyPad(body, width, fill, align);
}

}  // namespace

Result<std::string> BraceFormat(const std::string& fmt, const CallArgs& args, size_t max_bytes) {
  std::string out;
  size_t auto_index = 0;
  size_t i = 0, n = fmt.size();
  while (i < n) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < n && fmt[i + 1] == '}') {
        out.push_back('}');
        i += 2;
        continue;
      }
      return Status::InvalidArgument("Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 < n && fmt[i + 1] == '{') {
      out.push_back('{');
      i += 2;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos)
      return Status::InvalidArgument("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    if (field.find('{') != std::string::npos) {
      return Status::InvalidArgument("nested replacement fields are not supported");
    }
    i = close + 1;
    std::string spec;
    char conversion = 0;
    size_t colon = field.find(':');
    if (colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    size_t bang = field.find('!');
    if (bang != std::string::npos) {
      if (bang + 2 != field.size()) return Status::InvalidArgument("invalid conversion");
      conversion = field[bang + 1];
      field = field.substr(0, bang);
    }
    if (field.find_first_of(".[") != std::string::npos) {
      return Status::InvalidArgument("attribute access in format fields is not supported");
    }
    Value v;
    if (field.empty()) {
      if (auto_index >= args.pos.size()) {
        return Status::InvalidArgument("Replacement index " + std::to_string(auto_index) +
                                       " out of range for positional args tuple");
      }
      v = args.pos[auto_index++];
    } else if (field.find_first_not_of("0123456789") == std::string::npos) {
      if (field.size() > 6) return Status::InvalidArgument("format index too large");
      size_t idx = size_t(std::stoul(field));
      if (idx >= args.pos.size()) {
        return Status::InvalidArgument("Replacement index " + field +
                                       " out of range for positional args tuple");
      }
      v = args.pos[idx];
    } else {
      const Value* found = nullptr;
      for (const auto& [k, val] : args.kw) {
        if (k == field) found = &val;
      }
      if (!found) return Status::InvalidArgument("KeyError: '" + field + "'");
      v = *found;
    }
    if (conversion == 'r' || conversion == 'a') {
      v = Value::String(Repr(v));
    } else if (conversion == 's') {
      v = Value::String(Str(v));
    } else if (conversion != 0) {
      return Status::InvalidArgument(std::string("Unknown conversion specifier ") + conversion);
    }
    JISU_ASSIGN_OR_RETURN(std::string piece, ApplySpec(v, spec, max_bytes));
    out += piece;
    if (out.size() > max_bytes) return Status::ResourceExhausted("format: result too large");
  }
  return out;
}

}  // namespace jisu::jinja
