#!/usr/bin/env python3
"""A KV event subscriber as vLLM's examples/online_serving/kv_events_subscriber.py
reads events, for the simulator's tests: it asks the replay socket for every
buffered batch, then follows the PUB socket for --seconds, and prints each batch
as one JSON line {"seq", "ts", "rank", "events": [...]}, each event normalised
to {"type", fields by name} whichever encoding it came in (bytes as hex), plus
"encoding": "array" or "map" as found on the wire. Exits 1 on a frame that is
not (topic, 8-byte seq, payload).

Usage: kv-events-sub.py PUB_PORT REPLAY_PORT [--seconds S]
"""
import json
import sys
import time

import msgpack
import zmq

STORED = ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
          "lora_name", "extra_keys"]
REMOVED = ["block_hashes", "medium"]


def norm(v):
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, list):
        return [norm(x) for x in v]
    return v


def event(e):
    if isinstance(e, dict):
        return "map", {k: norm(v) for k, v in e.items()}
    names = STORED if e[0] == "BlockStored" else REMOVED if e[0] == "BlockRemoved" else []
    out = {"type": e[0]}
    for k, v in zip(names, e[1:]):
        out[k] = norm(v)
    return "array", out


def show(seq, payload):
    b = msgpack.unpackb(payload, raw=False)
    if isinstance(b, dict):
        ts, evs, rank, enc = b["ts"], b["events"], b.get("data_parallel_rank"), "map"
    else:
        ts, evs, rank, enc = b[0], b[1], b[2] if len(b) > 2 else None, "array"
    decoded = [event(e) for e in evs]
    encs = {enc} | {d[0] for d in decoded}
    print(json.dumps({"seq": seq, "ts": ts, "rank": rank, "encoding": "/".join(sorted(encs)),
                      "events": [d[1] for d in decoded]}), flush=True)


def main():
    pub, rep = int(sys.argv[1]), int(sys.argv[2])
    seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 1.0
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect("tcp://127.0.0.1:%d" % pub)
    req = ctx.socket(zmq.DEALER)
    req.connect("tcp://127.0.0.1:%d" % rep)
    req.send_multipart([b"", (0).to_bytes(8, "big")])
    last = -1
    while True:
        if not req.poll(5000):
            sys.exit("no replay answer")
        frames = req.recv_multipart()
        if len(frames) != 3 or frames[0] != b"":
            sys.exit("bad replay frames")
        seq = int.from_bytes(frames[1], "big", signed=True)
        if seq == -1:
            break
        show(seq, frames[2])
        last = seq
    end = time.time() + seconds
    while time.time() < end:
        if not sub.poll(100):
            continue
        frames = sub.recv_multipart()
        if len(frames) != 3 or len(frames[1]) != 8:
            sys.exit("bad frames")
        seq = int.from_bytes(frames[1], "big")
        if seq > last:
            show(seq, frames[2])
            last = seq


if __name__ == "__main__":
    main()
