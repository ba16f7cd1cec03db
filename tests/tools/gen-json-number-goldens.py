#!/usr/bin/env python3
"""Goldens for numbers in a request read as Python's json.loads reads them, then
rendered by Python's Jinja2 set up as transformers sets it up (hf_jinja.py):
integers past 64 bits, NaN, Infinity, -Infinity, reals past the double range,
duplicate keys. Each body is kept as JSON text, since jansson cannot read
these numbers: the C side reads it with irt_json_loads (src/tokenize/pyjson.c).

  python3 tests/tools/gen-json-number-goldens.py

writes tests/fixtures/templates/numbers.jsonl:
  {"name", "template", "body" (JSON text), "out" | "error", "c_refuses"?}
Besides the hand-written CASES, arith_cases() generates a few hundred rows of
integer and float arithmetic as Python does it: every operator (+ - * / // %
**, unary minus), comparisons, and the int, float, abs, round, string, sum,
max, min, sort and tojson filters, over 64-bit ints, ints past 64 bits and
floats, with mixed signs, zero divisors (ZeroDivisionError) and conversions
past the double range (OverflowError). The random draws use a fixed seed, so
the output only changes with the script (or Python, Jinja2).
"c_refuses": a piece of the C engine's refusal message, where it refuses by
design what Python computes: an integer of more than 4,300 digits that Python
never prints (the engine bounds big integers at 4,300 digits, TMPL_BIG_DIGITS,
ADR 0018), or a complex number (a negative number to a fractional power).
"""
import json
import math
import os
import random

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
    ("big_add", "{{ x + 1 }}", BIG, False),
    ("big_mul", "{{ x * 2 }}", BIG, False),
    ("big_sum", "{{ [x, 1]|sum }}", BIG, False),
    ("big_round", "{{ x|round }}", BIG, False),
]


# ---- generated arithmetic --------------------------------------------------------
INTS = [0, 1, -1, 7, -7, 3, 2**53 + 1, -(2**53 + 1), 2**63 - 1, -2**63, 2**63, -2**63 - 1,
        2**64 + 1, -(2**64) - 3, 10**20 + 3, -(10**25) - 7, 3**100, -(7**90), 2**200 + 12345,
        10**400 + 1, -(10**400) - 9, 2**1024 - 2**971, 2**1024 - 2**970, 2**1025]
FLOATS = [0.0, -0.0, 1.5, -2.5, 1e300, -1e300, 9.3e18, 2.0**64, 2.0**63, -2.0**63, 1e-300, 3.0,
          2.0**53, 1e20]
BIGS = [x for x in INTS if not -2**63 <= x < 2**63]
BIN_OPS = ["+", "-", "*", "/", "//", "%"]


def body_of(**vals):
    return json.dumps(vals)


def arith_cases(rnd):
    """(name, template, body, c_refuses) rows; every one involves an int past
    64 bits, a 64-bit overflow, or an exact int/float comparison."""
    rows = []
    nums = INTS + FLOATS
    for op in BIN_OPS:  # random pairs, at least one side big
        for k in range(40):
            a = rnd.choice(BIGS)
            b = rnd.choice(nums)
            if rnd.random() < 0.5:
                a, b = b, a
            rows.append(("bin_%s_%d" % (op, k), "{{ a %s b }}" % op, body_of(a=a, b=b), False))
    for op in ["//", "%", "/"]:  # zero divisors
        for k, (a, b) in enumerate([(2**64, 0), (-(10**30), 0), (2**70, 0.0), (0, 0)]):
            rows.append(("zero_%s_%d" % (op, k), "{{ a %s b }}" % op, body_of(a=a, b=b), False))
    for k, (a, b) in enumerate([  # 64-bit overflow of + - * // and unary minus
            (2**63 - 1, 1), (-2**63, -1), (-2**63, 1), (2**62, 2), (-2**63, 2**63 - 1),
            (3037000500, 3037000500), (2**32, 2**32), (-2**63, -2**63), (2**63 - 1, -2**63)]):
        rows.append(("ovf_%d" % k, "{{ a + b }} {{ a - b }} {{ a * b }} {{ a // b }} {{ a % b }} "
                     "{{ -a }} {{ -b }} {{ a / b }}", body_of(a=a, b=b), False))
    bases = [2, -3, 10, 2**64, -(2**70), 7**30, 0, 1, -1, 1.5, 2**1024 - 2**971, 3**100]
    exps = [0, 1, 2, 3, 17, 64, 200, -1, -2, 2**65, -(2**65), 0.5]
    for bi, b in enumerate(bases):  # **
        for ei, e in enumerate(exps):
            if abs(e) > 2**64 and b not in (0, 1, -1):
                continue  # Python would compute 2 ** 2 ** 65 for ever
            cplx = b < 0 and isinstance(e, float) and e != math.floor(e)
            rows.append(("pow_%d_%d" % (bi, ei), "{{ a ** b }}", body_of(a=b, b=e),
                         "complex number" if cplx else False))
    for k, (b, e) in enumerate([(2, 14000), (2, 14300), (10, 4299), (10, 4300), (7, 100000),
                                (2**64, 10**5), (-2, 14283)]):  # near and past the digit bound
        rows.append(("pow_bound_%d" % k, "{{ a ** b }}", body_of(a=b, b=e), False))
    for k, (b, e) in enumerate([(10, 4300), (2, 20000)]):  # Python computes, never prints
        rows.append(("pow_unprinted_%d" % k, "{{ (a ** b) > 0 }}", body_of(a=b, b=e),
                     "more than 4300 digits"))
    pairs = [(2**53 + 1, 2.0**53), (2**63 - 1, 2.0**63), (-2**63, -2.0**63), (2**63, 2.0**63),
             (9007199254740993, 9007199254740992.0), (2**64 + 1, 2.0**64), (2**64, 2.0**64),
             (-(2**64) - 3, -(2.0**64)), (10**400 + 1, 1e300), (10**20 + 3, 1e20),
             (2**1024 - 2**971, 1.7976931348623157e308), (3, 3.0), (2**63 - 1, 9.3e18)]
    for k in range(47):
        pairs.append((rnd.choice(INTS), rnd.choice(nums)))
    for k, (a, b) in enumerate(pairs):  # comparisons, both ways
        rows.append(("cmp_%d" % k, "{{ a < b }} {{ a <= b }} {{ a == b }} {{ a != b }} {{ a > b }} "
                     "{{ a >= b }} {{ b < a }} {{ b == a }} {{ a in [b] }}",
                     body_of(a=a, b=b), False))
    for k, a in enumerate(INTS):  # unary minus and the filters of one int
        rows.append(("one_%d" % k, "{{ -a }} {{ +a }} {{ a|abs }} {{ a|int }} {{ a|string }} "
                     "{{ a|tojson }} {{ a|round }} {{ a|round(-3) }} {{ a|round(-30) }} "
                     "{{ a is odd }} {{ a is divisibleby 3 }} {{ [a]|tojson }}",
                     body_of(a=a), False))
        rows.append(("float_%d" % k, "{{ a|float }} {{ a + 0.5 }}", body_of(a=a), False))
        rows.append(("roundf_%d" % k, "{{ a|round(0, 'floor') }} {{ a|round(2, 'ceil') }}",
                     body_of(a=a), False))
    for k in range(24):  # sum, max, min, sort over lists of ints and floats
        lst = [rnd.choice(INTS if rnd.random() < 0.75 else FLOATS) for _ in range(rnd.randint(1, 5))]
        rows.append(("sum_%d" % k, "{{ l|sum }}", body_of(l=lst), False))
        rows.append(("list_%d" % k, "{{ l|max }} {{ l|min }} {{ l|sort }} "
                     "{{ l|sort(reverse=true)|tojson }} {{ l|unique|list|length }}",
                     body_of(l=lst), False))
    for k, (a, b) in enumerate([  # true division of big operands, subnormals, rounding
            (10**400 + 1, 10**399), (2**1100, 3**600), (1, 10**400), (2**1024 - 2**970, 1),
            (2**53 + 1, 1), (2**63 - 1, 3), (1, 2**1074), (3, 2**1075), (1, 2**1075),
            (-(2**1100) - 1, 2**76 + 1), (10**30, -(7**20)), (-(10**400), 10**380),
            (2**54 + 3, 4), (0, -(2**70))]):
        rows.append(("div_%d" % k, "{{ a / b }}", body_of(a=a, b=b), False))
        if a:
            rows.append(("rdiv_%d" % k, "{{ b / a }}", body_of(a=a, b=b), False))
    for k, f in enumerate([1e30, -1e300, 2.0**64, 9.3e18, -9.3e18, 1.5e19]):  # int(float)
        rows.append(("intf_%d" % k, "{{ f|int }} {{ (f|int) - 1 }}", body_of(f=f), False))
    rows.append(("intf_inf", "{{ f|int }}", body_of(f=math.inf), False))
    rows.append(("intf_nan", "{{ f|int }}", body_of(f=math.nan), False))
    for k, s in enumerate(["123456789012345678901234567890", " -0000099999999999999999999 ",
                           "1_000_000_000_000_000_000_000", "1e30", "-9223372036854775809",
                           "9" * 4301]):
        rows.append(("ints_%d" % k, "{{ s|int }}", body_of(s=s), False))
    def rand_int(bits):
        x = rnd.getrandbits(bits) | 1 << (bits - 1)
        return -x if rnd.random() < 0.5 else x
    for k in range(100):  # true division: random sizes, near overflow and subnormal quotients
        a, b = rand_int(rnd.randint(1, 1100)), rand_int(rnd.randint(1, 1100))
        rows.append(("rdivr_%d" % k, "{{ a / b }}", body_of(a=a, b=b), False))
    for k in range(60):  # + - * // % on random big ints, mixed signs
        a, b = rand_int(rnd.randint(60, 700)), rand_int(rnd.randint(1, 700))
        rows.append(("rops_%d" % k, "{{ a + b }} {{ a - b }} {{ a * b }} {{ a // b }} {{ a % b }} "
                     "{{ a == b }} {{ a < b }}", body_of(a=a, b=b), False))
    for k in range(40):  # int to float at and around halfway points
        m = rnd.getrandbits(53) | 1 << 53  # 54 bits: the last one is the halfway bit
        x = (m << rnd.randint(0, 900)) + rnd.choice([0, 0, 1, -1])
        x = -x if rnd.random() < 0.5 else x
        rows.append(("half_%d" % k, "{{ a|float }} {{ a + 0.0 }} {{ a == (a|float) }} "
                     "{{ a < (a|float) }}", body_of(a=x), False))
    literals = [
        "{{ 123456789012345678901234567890 * 3 }}", "{{ -9223372036854775808 }}",
        "{{ 9223372036854775807 + 1 }}", "{{ (2 ** 64) // 3 }} {{ (2 ** 64) % -3 }}",
        "{{ 100000000000000000000000000042 + 1 }}", "{{ -(-9223372036854775808) }}",
        "{{ 99999999999999999999 - 99999999999999999998 }}",
        "{{ [10, 20, 30][(2 ** 64 + 2) - 2 ** 64] }}", "{{ 2 ** 64 is integer }}",
        "{{ (2 ** 64) is divisibleby (2 ** 32) }} {{ (2 ** 64 + 1) is divisibleby 3 }}",
        "{{ -7 // 2 }} {{ -7 % 2 }} {{ 7 // -2 }} {{ 7 % -2 }} {{ -7.5 // 2 }} {{ 7.5 % -2 }}",
        "{{ 10 ** -2 }} {{ (2 ** 64) ** -1 }} {{ 0 ** 0 }} {{ (-2) ** 63 }} {{ (-2) ** 64 }}",
        "{{ 10.0 ** 400 }}", "{{ 2 ** 0.5 }} {{ 1e308 * 10 }}", "{{ 1 / 3 }} {{ 2 ** 53 + 1 }}",
        "{{ 9007199254740993 / 1 }} {{ 9007199254740993 == 9007199254740992.0 }}",
        "{{ 9223372036854775807 == 9223372036854775808.0 }} {{ 9223372036854775807 < 9223372036854775808.0 }}",
        "{{ [2 ** 64, 1, 2 ** 63, -2 ** 65, 1.5]|sort }} {{ [2 ** 64, 2 ** 64 + 0.0]|unique|list }}",
        "{{ 1" + "0" * 4300 + " }}", "{{ 1" + "0" * 4299 + " // 10 ** 4290 }}",
    ]
    for k, src in enumerate(literals):
        rows.append(("lit_%d" % k, src, "{}", False))
    return rows


def main():
    rows = []
    for name, src, body, c_refuses in CASES + arith_cases(random.Random(16)):
        row = {"name": name, "template": src, "body": body}
        try:
            row["out"] = ENV.from_string(src).render(**json.loads(body))
        except Exception as e:  # noqa: BLE001 - a refusal is a golden too
            row["error"] = "%s: %s" % (type(e).__name__, e)
        if c_refuses:
            row["c_refuses"] = c_refuses
        rows.append(row)
    with open(OUT, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print("%s: %d rows" % (OUT, len(rows)))


if __name__ == "__main__":
    main()
