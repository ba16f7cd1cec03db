#!/usr/bin/env python3
"""A KV event publisher written to vLLM's wire format, for the gateway's tests.

It follows vllm/distributed/kv_events.py (ZmqEventPublisher): a PUB socket sends
(topic, 8-byte big-endian sequence, msgpack batch); a ROUTER socket answers a
replay request (empty frame, 8-byte start sequence) with (empty, seq, payload)
for each buffered batch from there on, then (empty, -1 as 8 bytes, empty).
Batches are encoded as msgspec encodes them: arrays with the tag first
(--encoding array, older vLLM) or maps with "type" (--encoding map, newer),
defaults omitted. Block hashes are its own (--hash int: signed 64-bit, as
vLLM's builtin hash gives; --hash bytes: 32-byte sha256), never the gateway's.

It binds both sockets on 127.0.0.1 at random ports in 10000-19999 (pyzmq checks
that they bind) and prints {"pub": P, "replay": R} on stdout. Then it reads one
JSON command per line on stdin, publishes one batch per command, and prints
"ok SEQ" (or "ok -" when nothing was published):
  {"op": "store", "tokens": [...]}   the prompt's full blocks it does not hold yet
  {"op": "remove", "tokens": [...], "from": i}   blocks i.. of that prompt
  {"op": "offload", "tokens": [...], "from": i}  CPU copies of blocks i.. (medium CPU), as
                                     vLLM's OffloadingConnector reports them: no parent,
                                     token_ids [], block_size ("described": true sends
                                     the parent and tokens, as a GPU store does)
  {"op": "evict-gpu", "tokens": [...], "from": i}  their GPU copies go (medium GPU)
  {"op": "clear"}                    AllBlocksCleared (and its cache forgets)
  {"op": "drop"}                     the next batch goes to the replay buffer only
  {"op": "garbage"}                  a payload that is not msgpack, next sequence
  {"op": "restart"}                  sequence back to 0, buffer and cache emptied
  {"op": "replay-mode", "mode": m}   how replay requests are answered from now on: "ok"
                                     (the buffered batches from the start asked), "old"
                                     (only those before it), "ahead" (the last batch
                                     numbered 10^15), "hole-once" (the next replay leaves
                                     out the second batch it owes, as a replay socket that
                                     drops under load; later ones are whole): a replay
                                     socket that misbehaves
  {"op": "hybrid-store", "tokens": [...], "window": w}   a hybrid model's batch: the
      prompt's blocks stored by a sliding-window group (group_idx 0) and by full
      attention (group_idx 1, announced second), then the window group's removal of
      all but its last w blocks (KV cache groups, vLLM's group_idx and
      kv_cache_spec_kind)
"""
import argparse
import hashlib
import json
import sys
import time

import msgpack
import zmq

END_SEQ = (-1).to_bytes(8, "big", signed=True)


class Engine:
    def __init__(self, hash_kind, block_size):
        self.hash_kind = hash_kind
        self.bs = block_size
        self.held = {}  # engine hash -> True

    def chain(self, tokens):
        """The engine hashes of the prompt's full blocks, with their tokens."""
        out, parent = [], b"root"
        for i in range(len(tokens) // self.bs):
            blk = tokens[i * self.bs:(i + 1) * self.bs]
            d = hashlib.sha256(parent + json.dumps(blk).encode()).digest()
            h = d if self.hash_kind == "bytes" else int.from_bytes(d[:8], "big", signed=True)
            out.append((h, blk))
            parent = d
        return out


def stored(enc, hashes, parent, tokens, bs, medium="GPU"):
    if enc == "array":  # lora_id, medium and lora_name given; extra_keys etc. omitted
        return ["BlockStored", hashes, parent, tokens, bs, None, medium, None]
    return {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent,
            "token_ids": tokens, "block_size": bs, "lora_id": None, "medium": medium,
            "lora_name": None}


def grouped(enc, ev, group, kind=None):
    """ev with vLLM's KV cache group fields (after extra_keys in a BlockStored array,
    after medium in a BlockRemoved one)."""
    if enc == "array":
        return ev + ([None, group, kind] if ev[0] == "BlockStored" else [group])
    out = dict(ev, group_idx=group)
    if kind is not None:
        out["kv_cache_spec_kind"] = kind
    return out


def removed(enc, hashes, medium="GPU"):
    if enc == "array":
        return ["BlockRemoved", hashes, medium]
    return {"type": "BlockRemoved", "block_hashes": hashes, "medium": medium}


def cleared(enc):
    return ["AllBlocksCleared"] if enc == "array" else {"type": "AllBlocksCleared"}


def batch(enc, events, rank):
    if enc == "array":
        return msgpack.packb([time.time(), events, rank], use_bin_type=True)
    return msgpack.packb({"ts": time.time(), "events": events, "data_parallel_rank": rank},
                         use_bin_type=True)


def rerank(payload, rank):
    """The batch with another data_parallel_rank (either encoding)."""
    try:
        b = msgpack.unpackb(payload, raw=False)
    except Exception:  # garbage stays garbage
        return payload
    if isinstance(b, dict):
        b["data_parallel_rank"] = rank
    else:
        b = b[:2] + [rank]
    return msgpack.packb(b, use_bin_type=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoding", choices=["array", "map"], default="map")
    ap.add_argument("--hash", choices=["int", "bytes"], default="bytes")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--buffer-steps", type=int, default=10000)
    ap.add_argument("--topic", default="")
    ap.add_argument("--pub-port", type=int, default=0, help="bind this port (default: random)")
    ap.add_argument("--replay-port", type=int, default=0)
    ap.add_argument("--first-seq", type=int, default=0, help="the first sequence number")
    ap.add_argument("--rank", type=int, default=0, help="data_parallel_rank in its batches")
    ap.add_argument("--replay-rank", type=int, default=None,
                    help="data_parallel_rank in the batches its replay sends (default --rank): "
                         "a replay socket that serves another rank")
    a = ap.parse_args()
    ctx = zmq.Context.instance()
    pub, router = ctx.socket(zmq.PUB), ctx.socket(zmq.ROUTER)
    pub.setsockopt(zmq.LINGER, 0)
    router.setsockopt(zmq.LINGER, 0)
    def bind(sock, port):
        if not port:
            return sock.bind_to_random_port("tcp://127.0.0.1", 10000, 20000, 200)
        sock.bind("tcp://127.0.0.1:%d" % port)
        return port

    pport, rport = bind(pub, a.pub_port), bind(router, a.replay_port)
    print(json.dumps({"pub": pport, "replay": rport}), flush=True)
    eng = Engine(a.hash, a.block_size)
    seq, buf, drop_next, replay_mode = a.first_seq, [], False, "ok"
    topic = a.topic.encode()
    poller = zmq.Poller()
    poller.register(router, zmq.POLLIN)
    poller.register(sys.stdin, zmq.POLLIN)

    def publish(payload):
        nonlocal seq, buf, drop_next
        sb = seq.to_bytes(8, "big")
        if not drop_next:
            pub.send_multipart([topic, sb, payload])
        drop_next = False
        buf.append((seq, payload))
        buf = buf[-a.buffer_steps:]
        seq += 1
        return seq - 1

    while True:
        for sock, _ in poller.poll(1000):
            if sock is router:
                frames = router.recv_multipart()
                if len(frames) != 3:
                    continue
                ident, _, start = frames
                start = int.from_bytes(start, "big")
                if replay_mode == "ahead" and buf:
                    router.send_multipart([ident, b"", (10**15).to_bytes(8, "big"), buf[-1][1]])
                owed = [(s, p) for s, p in buf if (s >= start) == (replay_mode != "old")]
                if replay_mode == "ahead":
                    owed = []
                elif replay_mode == "hole-once":
                    owed, replay_mode = owed[:1] + owed[2:], "ok"
                for s, p in owed:
                    if a.replay_rank is not None:
                        p = rerank(p, a.replay_rank)
                    router.send_multipart([ident, b"", s.to_bytes(8, "big"), p])
                router.send_multipart([ident, b"", END_SEQ, b""])
                continue
            line = sys.stdin.readline()
            if not line:
                return
            cmd = json.loads(line)
            op, out = cmd["op"], None
            if op == "store":  # one BlockStored per run of blocks it lacks
                evs, parent, hs, toks = [], None, [], []
                for h, blk in eng.chain(cmd["tokens"]) + [(None, None)]:
                    if h is None or h in eng.held:
                        if hs:
                            evs.append(stored(a.encoding, hs, run_parent, toks, a.block_size))
                        hs, toks, parent = [], [], h
                        continue
                    if not hs:
                        run_parent = parent
                    eng.held[h] = True
                    hs.append(h)
                    toks += blk
                    parent = h
                if evs:
                    out = publish(batch(a.encoding, evs, a.rank))
            elif op == "remove":
                hs = [h for h, _ in eng.chain(cmd["tokens"])[cmd.get("from", 0):] if h in eng.held]
                for h in hs:
                    del eng.held[h]
                out = publish(batch(a.encoding, [removed(a.encoding, hs[::-1])], a.rank))
            elif op == "offload":  # CPU copies of blocks from.. (vLLM's offloading connector)
                chain = eng.chain(cmd["tokens"])
                f = cmd.get("from", 0)
                hs = [h for h, _ in chain[f:]]
                toks = [t for _, blk in chain[f:] for t in blk]
                parent = chain[f - 1][0] if f > 0 else None
                if not cmd.get("described"):
                    toks, parent = [], None
                out = publish(batch(a.encoding, [stored(a.encoding, hs, parent, toks, a.block_size,
                                                        "CPU")], a.rank))
            elif op == "evict-gpu":  # GPU copies of blocks from.. go; CPU copies stay
                hs = [h for h, _ in eng.chain(cmd["tokens"])[cmd.get("from", 0):] if h in eng.held]
                for h in hs:
                    del eng.held[h]
                out = publish(batch(a.encoding, [removed(a.encoding, hs[::-1], "GPU")], a.rank))
            elif op == "hybrid-store":
                chain = eng.chain(cmd["tokens"])
                hs = [h for h, _ in chain]
                toks = [t for _, blk in chain for t in blk]
                for h in hs:
                    eng.held[h] = True
                keep = cmd.get("window", 1)
                st = stored(a.encoding, hs, None, toks, a.block_size)
                evs = [grouped(a.encoding, st, 0, "sliding_window"),
                       grouped(a.encoding, st, 1, "full_attention"),
                       grouped(a.encoding, removed(a.encoding, hs[:-keep]), 0)]
                out = publish(batch(a.encoding, evs, a.rank))
            elif op == "clear":
                eng.held.clear()
                out = publish(batch(a.encoding, [cleared(a.encoding)], a.rank))
            elif op == "drop":
                drop_next = True
            elif op == "garbage":
                out = publish(b"\xc1 not msgpack")
            elif op == "restart":
                seq, buf = 0, []
                eng.held.clear()
            elif op == "replay-mode":
                replay_mode = cmd["mode"]
            print("ok %s" % ("-" if out is None else out), flush=True)


if __name__ == "__main__":
    main()
