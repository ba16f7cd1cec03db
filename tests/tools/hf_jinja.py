"""The Jinja2 environment as transformers sets it up for chat templates, and the
special tokens it passes them, shared by gen-template-goldens.py and render-chat.py."""
import json
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def make_env(now=None):
    """now: a function giving the datetime strftime_now formats (default: the clock)."""
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    clock = now or datetime.now
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: clock().strftime(fmt)
    return env


def special_tokens(cfg):
    """transformers' special_tokens_map: the tokens tokenizer_config.json sets, as strings."""
    out = {}
    for k in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
              "mask_token"):
        v = cfg.get(k)
        if isinstance(v, dict):
            v = v.get("content")
        if v:
            out[k] = v
    extra = cfg.get("additional_special_tokens")
    if extra:
        out["additional_special_tokens"] = [x.get("content") if isinstance(x, dict) else x
                                            for x in extra]
    return out
