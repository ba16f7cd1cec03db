#!/usr/bin/env python3
"""A small DNS server for tests: UDP on 127.0.0.1:PORT, answering A and SRV queries
from a JSON file, reread when it changes. It stops by itself after LIFE seconds.

  dns_churn.py PORT RULES.json LIFE

RULES: {"name": {"a": ["127.0.0.2", ...]}, "srvname": {"srv": [[port, "target"], ...]}}
A port of 0 in an SRV record is replaced by a new random port on every answer (event
ports that change each lookup). Every answer has TTL 0. Unknown names: NXDOMAIN."""
import json
import os
import random
import socket
import struct
import sys
import time

port, path, life = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
cache = {"mtime": None, "rules": {}}


def rules():
    try:
        m = os.stat(path).st_mtime_ns
        if m != cache["mtime"]:
            with open(path) as f:
                cache["rules"] = json.load(f)
            cache["mtime"] = m
    except (OSError, ValueError):
        pass
    return cache["rules"]


def name_bytes(n):
    return b"".join(bytes([len(l)]) + l.encode() for l in n.rstrip(".").split(".") if l) + b"\0"


def question(d):
    o, labels = 12, []
    while d[o]:
        labels.append(d[o + 1:o + 1 + d[o]].decode(errors="replace"))
        o += 1 + d[o]
    qtype = struct.unpack(">H", d[o + 1:o + 3])[0]
    return ".".join(labels).lower(), qtype, d[12:o + 5]


def record(name, rtype, rdata):
    return name_bytes(name) + struct.pack(">HHIH", rtype, 1, 0, len(rdata)) + rdata


def answer(d):
    name, qtype, qsec = question(d)
    r = rules().get(name)
    answers = []
    if r and qtype == 1:
        answers = [record(name, 1, socket.inet_aton(ip)) for ip in r.get("a", [])]
    elif r and qtype == 33:
        for p, target in r.get("srv", []):
            p = p or random.randint(20000, 60000)
            answers.append(record(name, 33, struct.pack(">HHH", 0, 0, p) + name_bytes(target)))
    rcode = 3 if r is None else 0
    flags = 0x8180 | rcode
    head = struct.pack(">HHHHHH", struct.unpack(">H", d[:2])[0], flags, 1, len(answers), 0, 0)
    return head + qsec + b"".join(answers)


s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", port))
s.settimeout(0.2)
end = time.time() + life
while time.time() < end:
    try:
        d, peer = s.recvfrom(4096)
    except socket.timeout:
        continue
    try:
        s.sendto(answer(d), peer)
    except (IndexError, struct.error):
        pass
