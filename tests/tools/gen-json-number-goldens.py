#!/usr/bin/env python3
"""Goldens for numbers in a request read as Python's json.loads reads them, then
rendered by Python's Jinja2 set up as transformers sets it up (hf_jinja.py):
integers past 64 bits, NaN, Infinity, -Infinity, reals past the double range,
duplicate keys. Each body is kept as JSON text, since jansson cannot read
these numbers: the C side reads it with irt_json_loads (src/tokenize/pyjson.c).

  python3 tests/tools/gen-json-number-goldens.py

writes tests/fixtures/templates/numbers.jsonl:
  {"name", "template", "body" (JSON text), "out" | "error", "c_refuses"?}
"c_refuses": Python computes with a big integer there; the C engine prints and
compares them but refuses arithmetic on them (docs/internals/template.md), so
the test expects its refusal instead of Python's output.
"""
import json
import os

from hf_jinja import make_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "templates", "numbers.jsonl")
ENV = make_env()

BIG = '{"x": 123456789012345678901234567890, "y": -99999999999999999999}'
EDGE = ('{"a": 9223372036854775807, "b": 9223372036854775808, '
        '"c": -9223372036854775808, "d": -9223372036854775809}')
P64 = '{"x": 18446744073709551616, "y": 18446744073709551617}'
SPECIAL = '{"n": NaN, "i": Infinity, "m": -Infinity, "o": 1e400, "p": -1E+999, "u": 1e-400}'

CASES = [
    ("big_print", "{{ x }} {{ y }} {{ x|string }} {{ x ~ '!' }} {{ x|string + '!' }}", BIG, False),
    ("big_repr", "{{ [x, y] }} {{ {'k': x} }} {{ (x,) }}", BIG, False),
    ("big_tojson", "{{ x|tojson }} {{ [x, y]|tojson }} {{ {'k': x}|tojson(indent=2) }}", BIG, False),
    ("big_tests", "{{ x is number }} {{ x is integer }} {{ x is float }} {{ x is odd }} {{ x is even }} {{ y is odd }}", BIG, False),
    ("big_filters", "{{ x|int }} {{ x|float }} {{ y|abs }} {{ y|float }} {{ x|default(1) }}", BIG, False),
    ("big_unary", "{{ -x }} {{ -y }} {{ +x }} {{ - -x }}", BIG, False),
    ("big_truth", "{% if x %}t{% endif %} {{ not y }} {{ x and 1 }} {{ 0 or y }}", BIG, False),
    ("big_compare", "{{ x > y }} {{ x < 1 }} {{ y < -1e30 }} {{ x == x }} {{ x != y }} {{ x > 1.5 }} {{ y < -1.5 }} {{ x < 1e300 }}", BIG, False),
    ("big_in", "{{ x in [1, x] }} {{ y in [x] }} {{ {x: 'v'}[x] }}", BIG, False),
    ("edge_64", "{{ a }} {{ b }} {{ c }} {{ d }} {{ b > a }} {{ d < c }} {{ [d, b, a, c]|sort }} {{ [b, a]|max }} {{ [d, c]|min }}", EDGE, False),
    ("pow2_64", "{{ x == 18446744073709551616.0 }} {{ y == 18446744073709551616.0 }} {{ y > 18446744073709551616.0 }} {{ x|float }} {{ y|float == x|float }}", P64, False),
    ("big_sorted_dict", "{{ d|dictsort }} {{ d|tojson(sort_keys=true) }}", '{"d": {"z": 1e400, "a": 99999999999999999999999}}', False),
    ("special_print", "{{ n }} {{ i }} {{ m }} {{ o }} {{ p }} {{ u }}", SPECIAL, False),
    ("special_tojson", "{{ [n, i, m, o, p, u]|tojson }}", SPECIAL, False),
    ("special_tests", "{{ n == n }} {{ i > 1e308 }} {{ m < -1e308 }} {{ n is number }} {{ i is float }} {{ i + 1 }} {{ m * 2 }}", SPECIAL, False),
    ("dup_keys", "{{ d|tojson }} {{ d.keys()|list }} {{ d.a }}", '{"d": {"a": 1, "b": 2, "a": 3}}', False),
    ("dup_keys_nested", "{{ d }}", '{"d": {"a": {"x": 1}, "a": {"y": NaN}, "b": 1e400}}', False),
    ("plain_numbers", "{{ x }} {{ y }} {{ z }} {{ w }} {{ v }} {{ [x, y, z, w, v]|tojson }}", '{"x": 1E5, "y": -0, "z": 0.0, "w": 1.5e-7, "v": -12345678901234567}', False),
    ("strings_untouched", "{{ s }} {{ t|tojson }}", '{"s": "NaN Infinity 99999999999999999999999", "t": "-Infinity 1e400"}', False),
    ("big_len_error", "{{ x|length }}", BIG, False),
    ("big_long", "{{ x }} {{ x|tojson }} {{ x > 1e308 }} {{ -x < -1e308 }}", '{"x": %s}' % ("9" * 400), False),
    ("big_float_overflow", "{{ x|float }}", '{"x": %s}' % ("9" * 400), False),
    ("big_near_double_max", "{{ x|float }} {{ x > 1.7976931348623157e308 }}", '{"x": 1%s}' % ("0" * 308), False),
    ("big_4300_digits", "{{ x|string|length }}", '{"x": 1%s}' % ("0" * 4299), False),
    ("big_add", "{{ x + 1 }}", BIG, True),
    ("big_mul", "{{ x * 2 }}", BIG, True),
    ("big_sum", "{{ [x, 1]|sum }}", BIG, True),
    ("big_round", "{{ x|round }}", BIG, True),
]


def main():
    rows = []
    for name, src, body, c_refuses in CASES:
        row = {"name": name, "template": src, "body": body}
        try:
            row["out"] = ENV.from_string(src).render(**json.loads(body))
        except Exception as e:  # noqa: BLE001 - a refusal is a golden too
            row["error"] = "%s: %s" % (type(e).__name__, e)
        if c_refuses:
            row["c_refuses"] = True
        rows.append(row)
    with open(OUT, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print("%s: %d rows" % (OUT, len(rows)))


if __name__ == "__main__":
    main()
