#!/usr/bin/env python3
"""Generates tests/data/grammar/*.json: accept/reject references for src/grammar.

Every expected verdict comes from a reference implementation, never from this script's
judgement:
  regex.json        Python `re.fullmatch` of each pattern (jisu's "regex" constraint is a full
                    match) over hand-picked strings and every string up to a length over a small
                    alphabet;
  gbnf.json         GBNF grammars, each with an equivalent Python regex (re.fullmatch decides)
                    or, for the non-regular ones, Python's own parser of the language (json.loads
                    for JSON, a counter for balanced brackets);
  json_schema.json  JSON Schemas with JSON texts; `jsonschema` (Draft 2020-12, with its format
                    checker) decides validity. Texts are written the way the grammar writes JSON
                    (properties in schema order, ", " and ": " separators), so for most cases the
                    grammar must accept exactly the valid ones. Cases marked "subset" are where
                    the grammar generates on purpose only part of the valid texts (formats
                    without Feb 29, oneOf as anyOf): there only "accepted => valid" is checked.

Run: /work/refenv-structured/bin/python tools/make_grammar_fixtures.py
(a venv with jsonschema and rfc3339-validator from PyPI).
"""

import importlib.metadata
import itertools
import json
import os
import re

import jsonschema

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data",
                   "grammar")


def enumerate_strings(alphabet, max_len, limit=1200):
    out = []
    for n in range(max_len + 1):
        for t in itertools.product(alphabet, repeat=n):
            out.append("".join(t))
            if len(out) >= limit:
                return out
    return out


# ---- regex ---------------------------------------------------------------------------------

REGEX_CASES = [
    (r"abc", "abcx", 4, ["abc", "ab", "abcc", ""]),
    (r"a|b|cd", "abcd", 3, []),
    (r"(ab)*c", "abc", 6, ["c", "abababc"]),
    (r"a+b?c*", "abc", 5, []),
    (r"[a-c]{2,3}", "abcd", 4, []),
    (r"x{3}", "xy", 4, []),
    (r"x{2,}", "xy", 5, []),
    (r"(?:ab|a)(?:bc|c)", "abc", 5, []),
    (r"[^a-c]+", "abcdz-", 3, []),
    (r"\d{2}-\d{2}", "01-a", 5, ["12-34", "1-234", "99-99"]),
    (r"\w+@\w+\.com", "a_@.com", 9, ["alan_turing@enigma.com", "a@b.com", "@b.com", "a@b.co"]),
    (r"\s*x\s*", " \tx\n", 4, ["\u00a0x\u3000", "x", "  x  "]),
    (r"\S+", "a b\t", 3, ["é", "\u00a0"]),
    (r"[\d\s]+", "1 a\n", 3, []),
    (r"[\w.-]+", "a.-!_", 3, []),
    # ECMAScript's '.' also excludes \r and U+2028/U+2029, Python's only \n: those strings are
    # left out, the references disagree.
    (r"a.c", "a\nbc", 3, ["aéc", "a😀c", "a\tc"]),
    (r"(a|b)?c", "abc", 3, []),
    (r"[-a]+", "a-b", 3, []),
    (r"[a\-z]+", "a-zb", 3, []),
    (r"\.\*\+\?\(\)\[\]\{\}\|\\\^\$", ".*+", 2, [".*+?()[]{}|\\^$"]),
    (r"[é-ü]+ü", "éüa", 3, ["ñü", "çü"]),
    (r"😀+|€", "😀€a", 3, []),
    (r"\u00e9\x41", "éAa", 3, []),
    (r"^(yes|no)$", "yesno", 3, ["yes", "no"]),
    (r"a{0}b", "ab", 3, []),
    (r"(a{1,2}){2}", "a", 6, []),
    (r"a*?b+?", "ab", 4, []),
    (r"[0-9]{3}-[0-9]{4}", "0123456789-", 0, ["555-1234", "55-51234", "555-12345"]),
    (r"[^\d]", "1a ", 2, []),
    (r"(?<year>\d{4})-(?P<m>\d\d)", "12-", 0, ["2024-01", "24-01", "2024-1"]),
    (r"a{x}|{", "a{x}", 0, ["a{x}", "{", "ax"]),  # not quantifiers: literal braces
]


def python_pattern(p):
    """The same pattern in Python's syntax (3.11 spells named groups only as (?P<name>...))."""
    return p.replace("(?<", "(?P<")


def regex_fixture():
    cases = []
    for pattern, alphabet, max_len, extra in REGEX_CASES:
        strings = list(dict.fromkeys(extra + enumerate_strings(alphabet, max_len)))
        cases.append({
            "pattern": pattern,
            "strings": [[s, re.fullmatch(python_pattern(pattern), s) is not None] for s in strings],
        })
    return {"generator": "tools/make_grammar_fixtures.py", "reference": "Python re.fullmatch",
            "cases": cases}


# ---- GBNF ----------------------------------------------------------------------------------

def balanced(s):
    depth = 0
    for c in s:
        depth += 1 if c == "(" else -1
        if depth < 0:
            return False
    return depth == 0 and len(s) > 0


GBNF_CASES = [
    # (grammar, alphabet, max_len, extra strings, reference: regex or a name)
    ('root ::= "a" [b-d]+ "e" | "x"{2,3}', "abcdex", 5, ["abcdddde"], r"a[b-d]+e|x{2,3}"),
    ('root ::= item ("," item)*\nitem ::= [a-z]+ | [0-9]', "ab,1", 5, ["a,b,c,1"],
     r"(?:[a-z]+|[0-9])(?:,(?:[a-z]+|[0-9]))*"),
    ('# comment\nroot ::= (\n  "a" |  # first\n  "b"\n) "c"?  # tail\n', "abc", 3, [], r"(?:a|b)c?"),
    ('root ::= "a"\n  | "b" c\nc ::= [^a-b]', "abcd", 3, [], r"a|b[^a-b]"),
    ('root ::= [^"\\\\]* "\\"" ', 'a"\\', 4, [], r'[^"\\]*"'),
    ('root ::= "\\x41\\u00e9\\U0001F600" [\\n\\t]', "Aé😀\n\t", 0,
     ["Aé😀\n", "Aé😀\t", "Aé😀 ", "Aé😀"], r"Aé😀[\n\t]"),
    ('root ::= . "." .', "a.é", 3, ["😀.😀"], r"(?s:.)\.(?s:.)"),
    ('root ::= "ab"? ("cd" | "e"){1,2}', "abcde", 6, [], r"(?:ab)?(?:cd|e){1,2}"),
    ('root ::= x x\nx ::= "a"*', "ab", 5, [], r"a*"),
    ('root ::= item+\nitem ::= "(" item* ")"', "()", 8, [], "balanced"),
    ('root ::= [a-z_][a-z0-9_-]{0,3}', "a1_-Z", 5, [], r"[a-z_][a-z0-9_-]{0,3}"),
]


def gbnf_fixture():
    cases = []
    for grammar, alphabet, max_len, extra, ref in GBNF_CASES:
        strings = list(dict.fromkeys(extra + enumerate_strings(alphabet, max_len)))
        if ref == "balanced":
            verdicts = [[s, balanced(s)] for s in strings]
        else:
            verdicts = [[s, re.fullmatch(ref, s) is not None] for s in strings]
        cases.append({"grammar": grammar, "reference": ref, "strings": verdicts})
    return {"generator": "tools/make_grammar_fixtures.py",
            "reference": "an equivalent Python regex (re.fullmatch) or Python's own checker",
            "cases": cases}


# ---- JSON Schema ---------------------------------------------------------------------------

def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(", ", ": "))


PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "pattern": "^[a-z]+@[a-z]+\\.(com|org)$"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}

TREE = {
    "$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"], "additionalProperties": False}},
    "$ref": "#/$defs/node",
}

SHAPES = {
    "oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
         "required": ["kind", "r"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "integer"}},
         "required": ["kind", "side"], "additionalProperties": False},
    ]
}

MERGED = {
    "allOf": [
        {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        {"properties": {"label": {"type": "string", "maxLength": 3}}, "required": ["label"]},
    ],
}


def json_cases():
    """(name, schema, options, instances as Python values or raw texts, subset)."""
    cases = []
    ints = list(range(-120, 1300, 1))
    cases.append(("integer range", {"type": "integer", "minimum": -37, "maximum": 1234}, {},
                  ints, False))
    cases.append(("integer exclusive", {"type": "integer", "exclusiveMinimum": 5,
                                        "exclusiveMaximum": 105}, {}, list(range(-3, 120)), False))
    cases.append(("integer min only", {"type": "integer", "minimum": 95}, {},
                  list(range(0, 1100, 7)) + [95, 99, 100, 999, 12345678], False))
    cases.append(("integer max only", {"type": "integer", "maximum": -8}, {},
                  list(range(-200, 50, 3)) + [-8, -9, -10, -100], False))
    numbers = [0, 1, -1, 0.5, -0.5, 4.99, 5, 5.0, 5.25, 10, 10.0, 10.5, -10, -10.0, -10.01, 100,
               3.14159, -0.0, 7.000]
    cases.append(("number range", {"type": "number", "minimum": -10, "maximum": 10}, {}, numbers,
                  False))
    strings = ["", "a", "ab", "abc", "abcd", "é", "éé", "😀😀😀", 'a"b', "a\\b", "a\nb", "\t",
               "\u0001x", "abcde", "a/b"]
    cases.append(("string length", {"type": "string", "minLength": 2, "maxLength": 4}, {}, strings,
                  False))
    cases.append(("string any", {"type": "string"}, {}, strings + [1, None, True], False))
    cases.append(("pattern searched", {"type": "string", "pattern": "b[0-9]+"}, {},
                  ["b1", "ab12c", "b", "xb9", "", "B1", 'b1"', "\nb0\n"], False))
    cases.append(("pattern anchored", {"type": "string", "pattern": "^(ab|c)+$"}, {},
                  ["ab", "abc", "cab", "", "abx", "xab", "cc"], False))
    cases.append(("pattern escapes", {"type": "string", "pattern": '^[a"\\\\]{1,3}$'}, {},
                  ['a', '"', "\\", 'a"\\', "b", '""""'], False))
    cases.append(("enum", {"enum": ["red", "green", 3, None, {"a": 1}, [1, 2], "é\"x"]}, {},
                  ["red", "blue", 3, 4, None, {"a": 1}, [1, 2], "é\"x", "green"], False))
    cases.append(("const", {"const": "fixed"}, {}, ["fixed", "Fixed", 1], False))
    cases.append(("boolean/null", {"type": ["boolean", "null"]}, {}, [True, False, None, 0, "true"],
                  False))
    cases.append(("nullable", {"type": "integer", "nullable": True, "maximum": 3}, {},
                  [None, 1, 3, 4, "x"], False))
    person_ok = [
        {"name": "Ann", "age": 30},
        {"name": "Bob", "age": 0, "email": "bob@x.com"},
        {"name": "Bob", "age": 150, "tags": []},
        {"name": "Cy", "age": 7, "email": "c@d.org", "tags": ["a", "b"]},
        {"name": "Di", "age": 1, "tags": ["x"]},
    ]
    person_bad = [
        {"name": "", "age": 30},
        {"name": "Ann"},
        {"age": 30},
        {"name": "Ann", "age": 151},
        {"name": "Ann", "age": -1},
        {"name": "Ann", "age": 3, "extra": 1},
        {"name": "Ann", "age": 3, "email": "bob@x.net"},
        {"name": "Ann", "age": 3, "tags": ["a", "b", "c"]},
        {"name": "Ann", "age": 3.5},
        {"name": "toolongname", "age": 3},
    ]
    cases.append(("object", PERSON, {"strict": True}, person_ok + person_bad, False))
    cases.append(("object texts", PERSON, {"strict": True},
                  ['{"name":"Ann","age":30}', '{ "name" : "Ann" , "age" : 30 }',
                   '{\n  "name": "Ann",\n  "age": 30\n}', '{"age": 30, "name": "Ann"}',
                   '{"name": "Ann", "age": 30,}', '{"name": "Ann" "age": 30}',
                   '{"name": "Ann",  "age": 30}'], "texts"))
    cases.append(("recursive $ref", TREE, {},
                  [{"value": 1}, {"value": 1, "children": []},
                   {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]},
                   {"value": 1, "children": [{"children": []}]}, {"value": "1"}], False))
    cases.append(("oneOf discriminated", SHAPES, {},
                  [{"kind": "circle", "r": 1.5}, {"kind": "square", "side": 2},
                   {"kind": "square", "r": 1}, {"kind": "circle", "side": 2}], False))
    cases.append(("allOf merged", MERGED, {},
                  [{"id": 1, "label": "abc"}, {"id": 1}, {"label": "a"},
                   {"id": 1, "label": "abcd"}, {"id": 1, "label": "a", "x": 2}], False))
    cases.append(("array bounds", {"type": "array", "items": {"type": "integer", "minimum": 0},
                                   "minItems": 1, "maxItems": 3}, {},
                  [[], [0], [1, 2], [1, 2, 3], [1, 2, 3, 4], [-1], ["a"]], False))
    cases.append(("tuple", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                            "items": False}, {},
                  [["a", 1], ["a"], ["a", 1, 2], [1, "a"]], "prefix"))
    cases.append(("additional schema", {"type": "object", "properties": {"a": {"type": "integer"}},
                                        "additionalProperties": {"type": "boolean"}}, {},
                  [{"a": 1}, {"a": 1, "b": True}, {"a": 1, "b": 2}, {"b": True},
                   {"a": 1, "b": True, "c": False}, {"a": 1, "a2": True}], False))
    cases.append(("map with property counts",
                  {"type": "object", "additionalProperties": {"type": "integer"},
                   "minProperties": 1, "maxProperties": 2}, {},
                  [{}, {"a": 1}, {"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 3}, {"a": "x"}], False))
    cases.append(("map with key names",
                  {"type": "object", "additionalProperties": {"type": "boolean"},
                   "propertyNames": {"pattern": "^[a-z]{1,3}$"}}, {},
                  [{}, {"a": True}, {"abc": False, "b": True}, {"abcd": True}, {"A": True},
                   {"a": 1}], False))
    cases.append(("properties and counts",
                  {"type": "object", "properties": {"id": {"type": "integer"}},
                   "required": ["id"], "additionalProperties": {"type": "boolean"},
                   "minProperties": 2, "maxProperties": 3}, {},
                  [{"id": 1}, {"id": 1, "x": True}, {"id": 1, "x": True, "y": False},
                   {"id": 1, "x": True, "y": False, "z": True}], False))
    cases.append(("any object", {"type": "object"}, {"strict": True},
                  [{}, {"a": 1}, {"a": [1, {"b": None}], "c": "d"}, [], "x"], "strictany"))
    cases.append(("date", {"type": "string", "format": "date"}, {},
                  ["2024-01-31", "2023-02-28", "2024-02-29", "2023-02-30", "2023-13-01",
                   "2023-04-31", "23-01-01"], "subset"))
    cases.append(("date-time", {"type": "string", "format": "date-time"}, {},
                  ["2024-01-31T23:59:59Z", "2024-01-31T23:59:59.123+05:30", "2024-01-31 23:59:59Z",
                   "2024-01-31T24:00:00Z"], "subset"))
    cases.append(("uuid", {"type": "string", "format": "uuid"}, {},
                  ["123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000",
                   "123e4567-e89b-12d3-a456-42661417400"], "subset"))
    cases.append(("email", {"type": "string", "format": "email"}, {},
                  ["a@b.co", "first.last+x@mail.example.org", "nope", "@b.co"], "subset"))
    cases.append(("ipv4", {"type": "string", "format": "ipv4"}, {},
                  ["192.168.0.1", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3"], "subset"))
    return cases


def json_schema_fixture():
    out = []
    for name, schema, options, instances, subset in json_cases():
        # OpenAPI's nullable is not JSON Schema: the reference validates its meaning, "this
        # schema, or null".
        reference = schema
        if schema.get("nullable"):
            inner = {k: v for k, v in schema.items() if k != "nullable"}
            reference = {"anyOf": [inner, {"type": "null"}]}
        validator = jsonschema.Draft202012Validator(
            reference, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        texts = []
        for inst in instances:
            text = inst if subset == "texts" else dumps(inst)
            try:
                ok = validator.is_valid(json.loads(text))
            except json.JSONDecodeError:
                ok = False
            texts.append([text, ok])
        # "subset": the grammar accepts only part of what is valid (formats, tuple prefixes,
        # texts with other spacing or order, strict objects).
        out.append({"name": name, "schema": schema, "strict": bool(options.get("strict")),
                    "subset": bool(subset), "texts": texts})
    return {"generator": "tools/make_grammar_fixtures.py",
            "reference": "jsonschema %s Draft202012Validator with its format checker"
                         % importlib.metadata.version("jsonschema"),
            "cases": out}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in (("regex.json", regex_fixture()), ("gbnf.json", gbnf_fixture()),
                       ("json_schema.json", json_schema_fixture())):
        with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
