#!/usr/bin/env python3
"""The reference for a chat body's prompt text: vLLM's chat preparation
(vllm/entrypoints/chat_utils.py, the version pinned in docs/tokenizer.md),
written out in Python, then transformers' apply_chat_template rendering with
Python's Jinja2 set up as transformers sets it up.

  python3 tests/tools/render-chat.py < requests.jsonl

Each input line: {"dir": MODEL_DIR, "body": CHAT_BODY}; each output line:
{"text": PROMPT} or {"error": MESSAGE}. The dir holds tokenizer_config.json
(or chat_template.jinja). Used by tests/integration/test_gateway_chat_tokens.mjs.
"""
import json
import os
import sys

import jinja2
import jinja2.meta

from hf_jinja import make_env, special_tokens

HF_PARAMS = {"conversation", "tools", "documents", "chat_template", "add_generation_prompt",
             "continue_final_message", "tokenize", "padding", "truncation", "max_length",
             "return_tensors", "return_dict", "return_assistant_tokens_mask", "tokenizer_kwargs"}


ENV = make_env()


def load(dir_):
    with open(os.path.join(dir_, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    path = os.path.join(dir_, "chat_template.jinja")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return cfg, f.read()
    return cfg, cfg.get("chat_template")


def content_format(src):
    """vLLM's detection: openai when a loop runs over a message's content."""
    ast = ENV.parse(src)

    def elems(node, name, key=None):
        if isinstance(node, (jinja2.nodes.Filter, jinja2.nodes.Test)):
            return node.node is not None and elems(node.node, name, key)
        if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice):
            return elems(node.node, name, key)
        if key is None:
            return isinstance(node, jinja2.nodes.Name) and node.ctx == "load" and node.name == name
        if isinstance(node, jinja2.nodes.Getitem):
            return (elems(node.node, name) and isinstance(node.arg, jinja2.nodes.Const)
                    and node.arg.value == key)
        if isinstance(node, jinja2.nodes.Getattr):
            return elems(node.node, name) and node.attr == key
        return False

    names, todo = ["messages"], ["messages"]
    while todo:
        n = todo.pop(0)
        for a in ast.find_all(jinja2.nodes.Assign):
            if isinstance(a.target, jinja2.nodes.Name) and elems(a.node, n) and a.target.name not in names:
                names.append(a.target.name)
                todo.append(a.target.name)
    items = [lp.target.name for lp in ast.find_all(jinja2.nodes.For)
             if isinstance(lp.target, jinja2.nodes.Name) and any(elems(lp.iter, n) for n in names)]
    for lp in ast.find_all(jinja2.nodes.For):
        if any(elems(lp.iter, n, "content") for n in items):
            return "openai"
    return "string"


def conversation(messages, fmt):
    conv = []
    for m in messages:
        role = m["role"]
        content = m.get("content")
        if content is None:
            parts = []
        elif isinstance(content, str):
            parts = [{"type": "text", "text": content}]
        else:
            parts = content
        texts = []
        for p in parts:
            if isinstance(p, str):
                texts.append(p)
                continue
            t = p.get("type")
            field = {"text": "text", "input_text": "text", "output_text": "text",
                     "refusal": "refusal", "thinking": "thinking"}.get(t)
            if field is None:
                raise ValueError("unsupported part " + str(t))
            if p.get(field) is not None:
                texts.append(p[field])
        if fmt == "openai":
            out = {"role": role, "content": [{"type": "text", "text": t} for t in texts]}
        else:
            out = {"role": role, "content": "\n".join(texts)}
        if role == "assistant":
            if m.get("tool_calls") is not None:
                out["tool_calls"] = [json.loads(json.dumps(x)) for x in m["tool_calls"]]
            if m.get("reasoning") is not None:
                out["reasoning"] = m["reasoning"]
                out["reasoning_content"] = m["reasoning"]
        elif role == "tool":
            if "tool_call_id" in m:
                out["tool_call_id"] = m["tool_call_id"]
            if isinstance(out["content"], list):
                out["content"] = "\n".join(x["text"] for x in out["content"])
        if isinstance(m.get("name"), str):
            out["name"] = m["name"]
        conv.append(out)
    for out in conv:
        if out["role"] == "assistant" and "tool_calls" in out:
            if not out["tool_calls"]:
                del out["tool_calls"]
                continue
            for item in out["tool_calls"]:
                a = item["function"].get("arguments")
                if isinstance(a, str):
                    try:
                        item["function"]["arguments"] = json.loads(a)
                    except json.JSONDecodeError:
                        item["function"]["arguments"] = {}
                elif not isinstance(a, (dict, list)):
                    item["function"]["arguments"] = {}
    return conv


def tool_dicts(tools):
    if tools is None:
        return None
    out = []
    for t in tools:
        fn = t["function"]
        f = {"name": fn["name"], "description": fn.get("description"),
             "parameters": fn.get("parameters")}
        f.update({k: v for k, v in fn.items() if k not in f})
        d = {"type": t.get("type", "function"), "function": f}
        d.update({k: v for k, v in t.items() if k not in d})
        out.append(d)
    return out


_MODELS = {}


def model(dir_):
    """(config, compiled template, content format, variables read), once per dir."""
    if dir_ not in _MODELS:
        cfg, src = load(dir_)
        _MODELS[dir_] = (cfg, ENV.from_string(src), content_format(src),
                         jinja2.meta.find_undeclared_variables(ENV.parse(src)))
    return _MODELS[dir_]


TRUE_WORDS = {"1", "on", "t", "true", "y", "yes"}
FALSE_WORDS = {"0", "off", "f", "false", "n", "no"}


def lax_bool(body, key, default):
    """A boolean field as vLLM's pydantic request model validates it (lax mode: the
    conversion table of pydantic's docs)."""
    if key not in body:
        return default
    v = body[key]
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return v == 1
    if isinstance(v, str) and v.lower() in TRUE_WORDS | FALSE_WORDS:
        return v.lower() in TRUE_WORDS
    raise ValueError(f"{key}: not a valid boolean")


def render(dir_, body):
    cfg, tmpl, fmt, reads = model(dir_)
    # the request model's check runs on the raw values, before they are read as booleans
    if body.get("continue_final_message") and body.get("add_generation_prompt"):
        raise ValueError("both add_generation_prompt and continue_final_message")
    agp = lax_bool(body, "add_generation_prompt", True)
    cont = lax_bool(body, "continue_final_message", False)
    kw = {k: v for k, v in (body.get("chat_template_kwargs") or {}).items() if v is not None}
    agp = kw.get("add_generation_prompt", agp)
    cont = kw.get("continue_final_message", cont)
    if agp and cont:
        raise ValueError("both add_generation_prompt and continue_final_message")
    conv = conversation(body["messages"], fmt)
    variables = {"messages": conv, "tools": tool_dicts(kw.get("tools", body.get("tools"))),
                 "documents": kw.get("documents", body.get("documents")),
                 "add_generation_prompt": agp}
    variables.update(special_tokens(cfg))
    variables.update({k: v for k, v in kw.items() if k not in HF_PARAMS and k in reads})
    text = tmpl.render(**variables)
    if cont:
        final = conv[-1]["content"]
        if isinstance(final, list):
            final = [x["text"] for x in final if "text" in x][-1]
        loc = text.rindex(final.strip())
        if text[loc:loc + len(final.lstrip())] == final:
            text = text[:loc + len(final.lstrip())]
        else:
            text = text[:loc + len(final.strip())]
    return text


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            out = {"text": render(req["dir"], req["body"])}
        except Exception as e:  # noqa: BLE001 - the refusal is the answer
            out = {"error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
