#!/usr/bin/env python3
"""Writes the KV event batches of tests/fixtures/kv_events/ as vLLM encodes them.

vLLM (vllm/distributed/kv_events.py) encodes its msgspec structs with
omit_defaults=True and tag=True: older releases with array_like=True (a batch
[ts, events, dp_rank], an event [tag, field, ...]), newer ones as maps with the
tag under "type". Fields that hold their default are left out; fields newer
than a reader follow the known ones. This script writes the same bytes with
python3-msgpack (use_bin_type=True, as msgspec writes bytes as bin), so the C
decoder is tested against that layout. Run: python3 tests/tools/gen-kv-events.py DIR
"""
import hashlib
import os
import sys

import msgpack

BS = 16
T0 = list(range(1000, 1016))  # block 0
T1 = list(range(2000, 2016))  # block 1
T2 = list(range(3000, 3016))  # block 2, child of block 1


def pack(obj):
    return msgpack.packb(obj, use_bin_type=True)


def sha(n):
    return hashlib.sha256(b"block-%d" % n).digest()


def stored_map(hashes, parent, tokens, medium="GPU", lora_name=None, extra=None, **newer):
    ev = {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent,
          "token_ids": tokens, "block_size": BS, "lora_id": None, "medium": medium,
          "lora_name": lora_name}
    if extra is not None:
        ev["extra_keys"] = extra
    ev.update(newer)
    return ev


def main(out):
    os.makedirs(out, exist_ok=True)
    files = {}
    # Older vLLM: arrays, integer hashes, no lora_name (its BlockStored ended at medium).
    files["array_int.msgpack"] = pack([
        1700000000.5,
        [["BlockStored", [11, 12], None, T0 + T1, BS, None, "GPU"],
         ["BlockStored", [13], 12, T2, BS, None, "GPU"],
         ["BlockRemoved", [13], "GPU"],
         ["AllBlocksCleared"]],
    ])
    # Arrays with a dp rank, signed hashes, medium left out entirely (old default), and
    # trailing fields newer than the decoder (lora_name, extra_keys, group_idx, kind,
    # sliding window, and one nobody knows yet).
    files["array_signed_newer.msgpack"] = pack([
        1700000001.25,
        [["BlockStored", [-5, -6], None, T0 + T1, BS, None],
         ["BlockStored", [-7], -6, T2, BS, None, "CPU", None, [None], 0, "full_attention", None,
          {"future": True}],
         ["BlockRemoved", [-5]]],
        3,
    ])
    # Newer vLLM: maps, sha256_cbor byte hashes, cache_salt in extra_keys, newer fields.
    files["map_bytes.msgpack"] = pack({
        "ts": 1700000002.0,
        "events": [
            stored_map([sha(0), sha(1)], None, T0 + T1, extra=[("salt-1",), None]),
            stored_map([sha(2)], sha(1), T2, group_idx=0, kv_cache_spec_kind="full_attention",
                       some_future_field=[1, 2, 3]),
            {"type": "BlockRemoved", "block_hashes": [sha(2)], "medium": "GPU", "group_idx": 0},
            {"type": "AllBlocksCleared"},
        ],
        "data_parallel_rank": 1,
    })
    # Map keys in another order, the tag last; a LoRA adapter named in lora_name and in
    # extra_keys (it is not a cache salt).
    files["map_lora.msgpack"] = pack({
        "events": [{"token_ids": T0, "block_size": BS, "block_hashes": [99],
                    "parent_block_hash": None, "lora_id": 1, "medium": None,
                    "lora_name": "my-adapter", "extra_keys": [("my-adapter",)],
                    "type": "BlockStored"}],
        "ts": 1700000003,
    })
    # Hybrid models (vLLM's KV cache groups): each group publishes the same blocks with
    # its group_idx, and BlockStored its kv_cache_spec_kind. Group 0 is a sliding window
    # that drops the first block early; group 1, full attention, keeps both.
    files["map_hybrid.msgpack"] = pack({
        "ts": 1700000004.0,
        "events": [
            stored_map([sha(10), sha(11)], None, T0 + T1, group_idx=0,
                       kv_cache_spec_kind="sliding_window", kv_cache_spec_sliding_window=16),
            stored_map([sha(10), sha(11)], None, T0 + T1, group_idx=1,
                       kv_cache_spec_kind="full_attention"),
            {"type": "BlockRemoved", "block_hashes": [sha(10)], "medium": "GPU", "group_idx": 0},
        ],
    })
    # The same in arrays, Mamba beside full attention, then full attention's removal.
    files["array_hybrid.msgpack"] = pack([
        1700000005.0,
        [["BlockStored", [21, 22], None, T0 + T1, BS, None, "GPU", None, None, 0, "mamba"],
         ["BlockStored", [21, 22], None, T0 + T1, BS, None, "GPU", None, None, 1,
          "full_attention"],
         ["BlockRemoved", [21], "GPU", 0],
         ["BlockRemoved", [22], "GPU", 1]],
    ])
    # vLLM's OffloadingConnector (offloading_connector.py, take_events): a CPU copy names
    # its blocks only (parent None, token_ids [], block_size the offloaded block's, or 0
    # in newer vLLM); the CPU tier's evictions are a BlockRemoved with medium CPU.
    files["map_offload.msgpack"] = pack({
        "ts": 1700000004.0,
        "events": [
            {"type": "BlockStored", "block_hashes": [sha(0), sha(1)], "parent_block_hash": None,
             "token_ids": [], "block_size": BS, "lora_id": None, "medium": "CPU",
             "lora_name": None},
            {"type": "BlockStored", "block_hashes": [sha(2)], "parent_block_hash": None,
             "token_ids": [], "block_size": 0, "lora_id": None, "medium": "CPU",
             "lora_name": None},
            {"type": "BlockRemoved", "block_hashes": [sha(0)], "medium": "CPU"},
        ],
    })
    # Payloads that must be refused.
    files["bad_truncated.msgpack"] = files["map_bytes.msgpack"][:-7]
    files["bad_unknown_type.msgpack"] = pack([1.0, [["BlockMoved", [1]]]])
    files["bad_hash_type.msgpack"] = pack([1.0, [["BlockRemoved", [1.5], "GPU"]]])
    files["bad_huge_count.msgpack"] = bytes([0x92, 0xcb]) + b"\0" * 8 + bytes([0xdd, 0xff, 0xff, 0xff, 0xff])
    files["bad_no_events.msgpack"] = pack({"ts": 1.0})
    files["bad_trailing.msgpack"] = pack([1.0, []]) + b"\xc0"
    files["bad_group.msgpack"] = pack([1.0, [["BlockRemoved", [1], "GPU", -2]]])
    files["bad_kind.msgpack"] = pack([1.0, [["BlockStored", [1], None, T0, BS, None, "GPU",
                                                None, None, 0, 7]]])
    # block_size 0 is only a tokenless copy's: with token ids it says nothing.
    files["bad_zero_block_size.msgpack"] = pack([1.0, [["BlockStored", [1], None, T0, 0, None,
                                                         "GPU"]]])
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/kv_events")
