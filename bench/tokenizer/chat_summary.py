#!/usr/bin/env python3
"""Tables of bench/tokenizer/chat.sh's JSON lines (inferrail-chatbench's output).

chat_summary.py CHAT_JSONL COMMIT CPU LOAD_BEFORE LOAD_AFTER > chat.md
"""
import json
import sys

# goal and bar to beat, microseconds
GOAL = {"cold": (2000, 4500), "warm": (50, 100), "warm_parse_cache": (50, 100)}
LABEL = {"cold": "cold", "warm": "warm", "warm_parse_cache": "warm + parse cache"}


def main():
    path, commit, cpu, before, after = sys.argv[1:6]
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print(f"# Chat path speed at {commit}\n")
    print(f"Machine: {cpu}; load average {before} before, {after} after "
          "(other workers share it: read ratios, not absolutes).\n")
    print("Reproduce: `make build && bench/tokenizer/chat.sh`\n")
    print("## 8,000-token chat (system prompt + a new last user turn), microseconds\n")
    print("p50/p99: wall clock of the whole path; CPU: the thread's CPU time for it (no "
          "preemption); the steps are wall-clock p50s.\n")
    print("| model | mode | p50 | p99 | CPU p50 | CPU p99 | goal / bar | parse p50 | "
          "prepare+template p50 | tokenize p50 | tokenize p99 | tokenize CPU p50 / p99 | ids exact |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["case"] != "chat":
            continue
        for mode in ("cold", "warm", "warm_parse_cache"):
            if mode not in r:
                continue
            m = r[mode]
            g, b = GOAL[mode]
            print(f"| {r['model']} ({r['tokens']} tokens) | {LABEL[mode]} | {m['p50_us']:.0f} | "
                  f"{m['p99_us']:.0f} | {m['cpu_p50_us']:.0f} | {m['cpu_p99_us']:.0f} | {g} / {b} | {m['parse_p50_us']:.0f} | "
                  f"{m['render_p50_us']:.1f} | {m['encode_p50_us']:.1f} | "
                  f"{m['encode_p99_us']:.1f} | {m['encode_cpu_p50_us']:.1f} / {m['encode_cpu_p99_us']:.1f} | "
                  f"{r['warm_ids_exact']} |")
    print("\nwarm: the system prompt's ids in the tokenization cache, the body parsed whole; "
          "warm + parse cache: its messages seen before also come parsed from the chat parse "
          "cache (ADR 0020). Both tokenize the new last turn (1,200 bytes). Same bodies, same "
          "loop, each mode first in turn.\n")
    print("| model | warm CPU p50 | warm + parse cache CPU p50 | ratio | parse p50 (whole / cached) | "
          "parse cache hits / misses / whole | resolve scan CPU p50 / p99 |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if r["case"] != "chat" or "warm_parse_cache" not in r:
            continue
        w, c = r["warm"], r["warm_parse_cache"]
        print(f"| {r['model']} | {w['cpu_p50_us']:.0f} | {c['cpu_p50_us']:.0f} | "
              f"{c['cpu_p50_us'] / w['cpu_p50_us']:.2f} | {w['parse_p50_us']:.0f} / {c['parse_p50_us']:.0f} | "
              f"{r['parse_cache_hits']} / {r['parse_cache_misses']} / {r['parse_cache_whole']} | "
              f"{r['model_scan_cpu_p50_us']:.1f} / {r['model_scan_cpu_p99_us']:.1f} |")
    print("\nresolve scan: the gateway's other pass over the same body before it is parsed "
          "(ir_json_scan_key for `model`, checking the whole grammar), not in the times above.")
    print("\n## Threads sharing one tokenizer and its cache (whole path), tokens per second\n")
    print("| model | 1 thread, cache | threads | N threads, cache | N threads, no cache | "
          "ids exact (mismatches) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if r["case"] != "threads":
            continue
        print(f"| {r['model']} | {r['tokens_per_s_1_thread_cached'] / 1e6:.2f} M | {r['threads']} | "
              f"{r['tokens_per_s_cached'] / 1e6:.2f} M | {r['tokens_per_s_uncached'] / 1e6:.2f} M | "
              f"{r['ids_exact']} ({r['mismatches']}) |")
    print("\n## Hostile bodies (bar: tokenized or refused within 100 ms), milliseconds\n")
    print("Over 5 runs, each after a pause of 100 ms (the first after 1 s; under SCHED_FIFO the "
          "kernel's real-time budget of 950 ms a second otherwise stopped every 11th or 12th run "
          "of a back-to-back series for 50 ms): wall-clock median and worst, the thread's CPU time "
          "median and worst, and each step's wall-clock median (prepare+template includes freeing "
          "the parsed body). What made the 50,000 messages and the 4 MiB message faster, step by "
          "step: `chat-hostile-speed.md`.\n")
    print("| model | input | body | outcome | tokens | median | worst | CPU median | CPU worst | "
          "parse | prepare+template | tokenize | tokenize CPU | within 100 ms (wall / CPU) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["case"] != "hostile":
            continue
        outcome = r["outcome"] + (f": {r['reason']}" if r.get("reason") else "")
        print(f"| {r['model']} | {r['input']} | {r['body_bytes'] / 1e6:.2f} MB | {outcome} | "
              f"{r['tokens']} | {r['median_ms']:.1f} | {r['worst_ms']:.1f} | "
              f"{r['cpu_median_ms']:.1f} | {r['cpu_worst_ms']:.1f} | "
              f"{r['parse_median_ms']:.1f} | {r['render_median_ms']:.1f} | "
              f"{r['encode_median_ms']:.1f} | {r['encode_cpu_median_ms']:.1f} | {r['within_100ms']} / {r['cpu_within_100ms']} |")


if __name__ == "__main__":
    main()
