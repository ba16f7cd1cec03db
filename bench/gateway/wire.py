#!/usr/bin/env python3
"""wire.py: the gateway's overhead on the wire, from loopback packets.

    wire.py --gw-port P --sim-ports A,B,C [--skip N] [--ready FILE] [--ring-mib M]

Run as root (an AF_PACKET socket). It opens a TPACKET_V3 receive ring on "lo"
with a filter that keeps only IPv4 TCP packets carrying payload (their first
SNAP bytes), writes FILE when the ring is ready, then sleeps until SIGTERM or
SIGINT: the kernel fills the ring on its own (the capture costs the benchmark
no CPU of this process while it runs; every packet's copy into the ring is
done by the kernel when the packet is sent). The ring is sized to hold the
whole run; it is read once, after the signal. Each packet's time is the
kernel's (the timestamp the packet tap takes when the packet is sent on lo).

Per request of the load generator, on its keep-alive connection to the gateway
(one request in flight per connection, so a connection alternates requests
and responses), and on the gateway's connection to a simulator:
  t1  the client's request to the gateway     t2  the gateway's request to the engine
  t3  the engine's response to the gateway    t4  the gateway's response to the client
The client's request and the gateway's response are matched by connection and
order; the gateway's response carries the request id (x-request-id) that it
also sent upstream, which finds the upstream request; the engine's response is
the next message on that upstream connection. The overhead of one request is
(t2 - t1) + (t4 - t3): the time the gateway holds the request each way,
including the time it waits in the kernel before the gateway reads it. The
first N requests (by t1: the load generator's warm-up) are left out.

Prints JSON members for the benchmark's row (with a trailing comma): "wire_us"
with n, p50, p90, p99 (microseconds) of the overhead taken at the first packet
of each message ("first") and at the last ("last"), of its two legs (t2 - t1:
"in", t4 - t3: "out", first packets), the histogram of "first" in whole
microseconds ("hist", to pool rounds), how many requests had a message of more
than one packet, how many could not be matched, and the kernel's counts of
packets that passed the filter, were dropped, and found the ring full.
With --dump FILE, each matched request's id and two legs (ns) go to FILE.
"""
import argparse
import ctypes
import json
import mmap
import os
import signal
import socket
import struct
import sys

SOL_PACKET = 263
PACKET_RX_RING = 5
PACKET_STATISTICS = 6
PACKET_VERSION = 10
TPACKET_V3 = 2
ETH_P_ALL = 0x0003
SO_ATTACH_FILTER = 26
PACKET_OUTGOING = 4
SNAP = 14 + 60 + 60 + 1024  # Ethernet, IP and TCP headers at most, 1 KiB of payload


def payload_filter(snap):
    """Classic BPF: packets as sent (lo shows each packet twice: as sent and as
    received), IPv4, TCP, IP total length > IP + TCP header lengths."""
    ins = [
        (0x30, 0, 0, 0xFFFFF004),  # ldb [pkttype]       (SKF_AD_OFF + SKF_AD_PKTTYPE)
        (0x15, 0, 14, PACKET_OUTGOING),  # jeq sent else drop
        (0x28, 0, 0, 12),  # ldh [12]            ethertype
        (0x15, 0, 12, 0x0800),  # jeq IPv4 else drop
        (0x30, 0, 0, 23),  # ldb [23]            IP protocol
        (0x15, 0, 10, 6),  # jeq TCP else drop
        (0xB1, 0, 0, 14),  # ldxb 4*([14]&0xf)   x = IP header length
        (0x50, 0, 0, 26),  # ldb [x+26]          TCP data offset byte
        (0x74, 0, 0, 4),  # rsh #4
        (0x64, 0, 0, 2),  # lsh #2              a = TCP header length
        (0x0C, 0, 0, 0),  # add x
        (0x02, 0, 0, 0),  # st M[0]             IP + TCP header lengths
        (0x28, 0, 0, 16),  # ldh [16]            IP total length
        (0x61, 0, 0, 0),  # ldx M[0]
        (0x2D, 0, 1, 0),  # jgt x               payload?
        (0x06, 0, 0, snap),  # ret #snap
        (0x06, 0, 0, 0),  # ret #0              drop
    ]
    prog = b"".join(struct.pack("HBBI", *i) for i in ins)
    buf = ctypes.create_string_buffer(prog)
    fprog = struct.pack("HL", len(ins), ctypes.addressof(buf))
    return buf, fprog


def open_ring(mib):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    keep, fprog = payload_filter(SNAP)
    s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    s.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V3)
    block = 1 << 22
    nblocks = max(1, (mib << 20) // block)
    # tp_retire_blk_tov: a block is handed over only when full (or after 60 s),
    # so that no block is retired half empty while this process sleeps.
    req = struct.pack("IIIIIII", block, nblocks, 1 << 11, (block >> 11) * nblocks, 60000, 0, 0)
    s.setsockopt(SOL_PACKET, PACKET_RX_RING, req)
    s.bind(("lo", 0))
    ring = mmap.mmap(s.fileno(), block * nblocks, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 12)  # clear the counts of the set-up
    return s, ring, block, nblocks, keep


def packets(ring, block, nblocks):
    """(ns, sport, dport, captured payload) of each packet as sent, in ring order."""
    # The ring fills from block 0; the current block (not yet retired) is read
    # as it stands: the traffic has stopped when this runs.
    for b in range(nblocks):
        base = b * block
        num, first = struct.unpack_from("II", ring, base + 12)
        if num == 0:
            break
        off = base + first
        for _ in range(num):
            nxt, sec, nsec, snaplen, _len, _st, mac, net = struct.unpack_from("IIIIIIHH", ring, off)
            if ring[off + 58] == PACKET_OUTGOING:  # sockaddr_ll's sll_pkttype
                ip = off + net
                tcp = ip + (ring[ip] & 0xF) * 4
                sport, dport = struct.unpack_from("!HH", ring, tcp)
                pay = bytes(ring[tcp + (ring[tcp + 12] >> 4) * 4 : off + mac + snaplen])
                yield sec * 1_000_000_000 + nsec, sport, dport, pay
            off += nxt


def request_id(p):
    i = p.find(b"\r\nx-request-id: ")
    if i < 0:
        return None
    j = p.find(b"\r\n", i + 16)
    return p[i + 16 : j] if j > 0 else None


def messages(pkts, server_ports):
    """Per connection (keyed by its two ports), its messages in order:
    [direction (0 to the server, 1 back), first ns, last ns, head bytes,
    packets]. A message is a run of payload packets one way."""
    conns = {}
    for ns, sp, dp, pay in pkts:
        if dp in server_ports:
            key, d = (sp, dp), 0
        elif sp in server_ports:
            key, d = (dp, sp), 1
        else:
            continue
        ms = conns.setdefault(key, [])
        if ms and ms[-1][0] == d:
            ms[-1][2] = ns
            ms[-1][4] += 1
        else:
            ms.append([d, ns, ns, pay, 1])
    return conns


def exchanges(conns):
    """(request, response) pairs of messages, each connection in order."""
    for ms in conns.values():
        for a, b in zip(ms, ms[1:]):
            if a[0] == 0 and b[0] == 1:
                yield a, b


def quantiles(v):
    v = sorted(v)
    q = lambda p: v[min(len(v) - 1, int(p * len(v)))] / 1e3 if v else -1
    return {"n": len(v), "p50": round(q(0.5), 1), "p90": round(q(0.9), 1), "p99": round(q(0.99), 1)}


def analyse(pkts, gw_port, sim_ports, skip, dump=None):
    """The quantiles of each request's overhead, by variant and leg; with
    dump, a file that gets a line per request: its id, t2 - t1, t4 - t3 (ns)."""
    client = list(exchanges(messages(pkts, {gw_port})))
    upstream = {}
    for rq, rs in exchanges(messages(pkts, set(sim_ports))):
        rid = request_id(rq[3])
        if rid:
            upstream[rid] = (rq, rs)
    client.sort(key=lambda e: e[0][1])
    v = {k: [] for k in ("first", "last", "in", "out")}
    unmatched = multi = 0
    for rq, rs in client[skip:]:
        if not rq[3].startswith(b"POST "):
            continue
        up = upstream.get(request_id(rs[3]))
        if not up:
            unmatched += 1
            continue
        urq, urs = up
        v["first"].append((urq[1] - rq[1]) + (rs[1] - urs[1]))
        v["last"].append((urq[2] - rq[2]) + (rs[2] - urs[2]))
        v["in"].append(urq[1] - rq[1])
        v["out"].append(rs[1] - urs[1])
        if dump:
            dump.write(f"{request_id(rs[3]).decode()} {urq[1] - rq[1]} {rs[1] - urs[1]}\n")
        multi += max(rq[4], rs[4], urq[4], urs[4]) > 1
    out = {k: quantiles(x) for k, x in v.items()}
    hist = {}  # "first" in whole microseconds: count, to pool rounds
    for x in v["first"]:
        hist[x // 1000] = hist.get(x // 1000, 0) + 1
    out["hist"] = {str(k): hist[k] for k in sorted(hist)}
    out.update(unmatched=unmatched, multi_packet=multi)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gw-port", type=int, required=True)
    ap.add_argument("--sim-ports", required=True)
    ap.add_argument("--skip", type=int, default=0)
    ap.add_argument("--ready")
    ap.add_argument("--ring-mib", type=int, default=256)
    ap.add_argument("--dump", help="a file for each request's id and legs")
    a = ap.parse_args()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    s, ring, block, nblocks, _keep = open_ring(a.ring_mib)
    if a.ready:
        open(a.ready, "w").close()
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    got, drops, freezes = struct.unpack("III", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 12))
    sims = [int(p) for p in a.sim_ports.split(",")]
    pk = list(packets(ring, block, nblocks))
    with open(a.dump or os.devnull, "w") as dump:
        out = analyse(pk, a.gw_port, sims, a.skip, dump if a.dump else None)
    out.update(packets=got, sent_payload=len(pk), drops=drops, ring_full=freezes)
    print('"wire_us":' + json.dumps(out, separators=(",", ":")) + ",", end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
