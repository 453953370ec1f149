#!/usr/bin/env python3
"""Encodes the text-format messages of NAME.textproto into NAME.et with protoc.

A .textproto here holds a file's messages in order, each after a line
"#@ GlobalMetadata" or "#@ Node"; each message is encoded by
`protoc --encode=clustertwin.chakra_et.<Type>` against traces/chakra/chakra_et.proto
and written after its length as a base-128 varint (Chakra's .et framing).
Nothing of clustertwin's own writer is used, so the files test the reader
against the schema's wire format.

  tests/data/chakra/make_et.py [FILE.textproto ...]   (default: every .textproto here)
"""
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def encode(kind: str, text: str) -> bytes:
    return subprocess.run(
        ["protoc", f"--encode=clustertwin.chakra_et.{kind}", f"--proto_path={ROOT}", "traces/chakra/chakra_et.proto"],
        input=text.encode(), capture_output=True, check=True, cwd=ROOT).stdout


def convert(path: pathlib.Path) -> None:
    blocks, kind, lines = [], None, []
    for line in path.read_text().splitlines():
        if line.startswith("#@ "):
            if kind:
                blocks.append((kind, "\n".join(lines)))
            kind, lines = line[3:].strip(), []
        elif kind:
            lines.append(line)
    if kind:
        blocks.append((kind, "\n".join(lines)))
    data = b"".join(varint(len(m)) + m for m in (encode(k, t) for k, t in blocks))
    path.with_suffix(".et").write_bytes(data)
    print(f"{path.with_suffix('.et').name}: {len(blocks)} messages, {len(data)} bytes")


for p in [pathlib.Path(a) for a in sys.argv[1:]] or sorted(HERE.glob("*.textproto")):
    convert(p)
