"""safetensors interop with numpy + json alone (no safetensors package): the one table of
tensors that both directions of tests/io/test_interop.cpp check against.

    python3 interop.py write DIR   # DIR/python.safetensors, DIR/python_unpadded.safetensors,
                                   # DIR/expected.json (the table, for the C++ side)
    python3 interop.py check FILE  # FILE, written by tally from expected.json, holds the table

Every value is exactly representable in its dtype, so both sides compare exactly.
"""
import json
import os
import re
import struct
import sys

import numpy as np

# name -> (safetensors dtype, shape, flat values)
TABLE = {
    "f64": ("F64", [2, 3], [0.0, 1.0, -2.5, 1e300, -1e-300, 3.141592653589793]),
    "f32": ("F32", [3, 2], [0.0, -0.0, 1.5, -3.25, 3.4028234663852886e38, 1.401298464324817e-45]),
    "f16": ("F16", [4], [1.0, -2.0, 0.5, 65504.0]),
    "bf16": ("BF16", [2, 3], [1.0, -2.0, 0.5, 1.5 * 2.0**100, 2.0**-7, -3.0]),
    "f8_e4m3": ("F8_E4M3", [5], [0.0, 1.0, -2.0, 0.5, 448.0]),
    "f8_e5m2": ("F8_E5M2", [5], [0.0, 1.0, -2.0, 0.5, 57344.0]),
    "i64": ("I64", [3], [-(2**62) - 1, 2**63 - 1, -(2**63)]),
    "i32": ("I32", [2, 2], [-(2**31), 2**31 - 1, 0, -1]),
    "u8": ("U8", [4], [0, 1, 128, 255]),
    "i8": ("I8", [4], [-128, 127, 0, -1]),
    "i16": ("I16", [3], [-(2**15), 2**15 - 1, -2]),
    "mask": ("BOOL", [2, 3], [True, False, False, True, True, False]),
    "scalar": ("F32", [], [42.5]),
    "empty": ("F32", [0, 3], []),
    "model.layers.0.attn.weight": ("F32", [2, 2], [1.0, 2.0, 3.0, 4.0]),
}
METADATA = {"format": "pt", "step": "1200", "note": "\u00fcn\u00efc\u00f6d\u00e9 \u2713", "config": json.dumps({"lr": 3e-4, "d": 64})}

NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "U8": "u1", "I8": "i1", "I16": "<i2"}
SIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "I32": 4, "U8": 1, "I8": 1, "I16": 2, "BOOL": 1}
# The fp8 bit patterns of the values above (OCP FP8: e4m3fn has bias 7, e5m2 bias 15).
FP8 = {
    "F8_E4M3": {0.0: 0x00, 1.0: 0x38, -2.0: 0xC0, 0.5: 0x30, 448.0: 0x7E},
    "F8_E5M2": {0.0: 0x00, 1.0: 0x3C, -2.0: 0xC0, 0.5: 0x38, 57344.0: 0x7B},
}


def encode(dtype, values):
    """The little-endian bytes of `values` as `dtype`."""
    if dtype in NUMPY:
        return np.array(values, dtype=NUMPY[dtype]).tobytes()
    if dtype == "BF16":
        bits = np.array(values, dtype="<f4").view("<u4")
        assert not np.any(bits & 0xFFFF), "a bf16 value in the table is not exact"
        return (bits >> 16).astype("<u2").tobytes()
    if dtype in FP8:
        return bytes(FP8[dtype][float(v)] for v in values)
    if dtype == "BOOL":
        return np.array(values, dtype=bool).view("u1").tobytes()
    raise ValueError(dtype)


def decode(dtype, data, shape):
    """numpy values of `data`: bf16 through a uint16 view, fp8 through the table, bool as bool."""
    if dtype in NUMPY:
        return np.frombuffer(data, dtype=NUMPY[dtype]).reshape(shape)
    if dtype == "BF16":
        return (np.frombuffer(data, dtype="<u2").astype("<u4") << 16).view("<f4").reshape(shape)
    if dtype in FP8:
        inverse = {b: v for v, b in FP8[dtype].items()}
        return np.array([inverse[b] for b in data], dtype=np.float64).reshape(shape)
    if dtype == "BOOL":
        raw = np.frombuffer(data, dtype="u1")
        assert np.all(raw <= 1), f"BOOL bytes other than 0/1: {raw}"
        return raw.astype(bool).reshape(shape)
    raise ValueError(dtype)


def write_file(path, names, padded, indent=None):
    header = {"__metadata__": METADATA}
    data = b""
    for name in names:
        dtype, shape, values = TABLE[name]
        b = encode(dtype, values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    text = json.dumps(header, indent=indent, ensure_ascii=False).encode("utf-8")
    if padded:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def write(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    # As the reference writer lays tensors out: widest dtype first, then by name; header padded.
    by_size = sorted(TABLE, key=lambda n: (-SIZE[TABLE[n][0]], n))
    write_file(f"{out_dir}/python.safetensors", by_size, padded=True)
    # Data in reverse name order, an indented header with newlines, no padding.
    write_file(f"{out_dir}/python_unpadded.safetensors", sorted(TABLE, reverse=True), padded=False, indent=1)
    # Dtypes of the format tally reads and lists but does not compute with, beside one it does.
    others = {"ids": ("U16", [3], struct.pack("<3H", 65535, 2, 3)), "mask": ("U32", [2], struct.pack("<2I", 1, 7)),
              "packed": ("F4", [3], bytes(2)), "w": ("F32", [1], struct.pack("<f", 0.5))}
    header, data = {}, b""
    for name, (dtype, shape, raw) in others.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    with open(f"{out_dir}/other_dtypes.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    with open(f"{out_dir}/expected.json", "w", encoding="utf-8") as f:
        json.dump({"tensors": {n: {"dtype": d, "shape": s, "values": v} for n, (d, s, v) in TABLE.items()},
                   "metadata": METADATA}, f, ensure_ascii=False)
    print(f"wrote {len(TABLE)} tensors to {out_dir}/python.safetensors and python_unpadded.safetensors")


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), f"duplicate keys in header: {keys}"
    return dict(pairs)


def check_checksums_entry(sums, names):
    """tally's checksums, read with json alone: one "xxh3-64:<16 hex digits>" per tensor and the metadata."""
    assert set(sums) == names | {"__metadata__"}, f"checksums of {sorted(sums)} for tensors {sorted(names)}"
    for name, text in sums.items():
        assert re.fullmatch("xxh3-64:[0-9a-f]{16}", text), f"{name}: checksum {text!r}"


def check(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    assert n % 8 == 0, f"header length {n} is not padded to a multiple of 8"
    header = json.loads(blob[8 : 8 + n].decode("utf-8"), object_pairs_hook=no_duplicates)
    data = blob[8 + n :]
    metadata = header.pop("__metadata__", {})
    check_checksums_entry(json.loads(metadata.pop("tally.checksums")), set(TABLE))
    assert metadata == METADATA, f"metadata {metadata} != {METADATA}"
    assert set(header) == set(TABLE), f"names {sorted(header)} != {sorted(TABLE)}"
    ranges = sorted((e["data_offsets"][0], e["data_offsets"][1]) for e in header.values())
    end = 0
    for b, e in ranges:
        assert b == end, f"tensor data does not tile the data section at {b} (expected {end})"
        end = e
    assert end == len(data), f"data ends at {end} but the file holds {len(data)} bytes of data"
    for name, (dtype, shape, values) in TABLE.items():
        entry = header[name]
        assert entry["dtype"] == dtype, f"{name}: dtype {entry['dtype']} != {dtype}"
        assert entry["shape"] == shape, f"{name}: shape {entry['shape']} != {shape}"
        b, e = entry["data_offsets"]
        got = decode(dtype, data[b:e], shape)
        want = np.array(values, dtype=got.dtype if dtype not in FP8 else np.float64).reshape(shape)
        assert got.shape == want.shape and np.array_equal(got, want), f"{name}: values {got.tolist()} != {want.tolist()}"
        assert data[b:e] == encode(dtype, values), f"{name}: bytes differ (e.g. the sign of -0.0)"
    print(f"ok: {path} holds the {len(TABLE)} expected tensors and metadata")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        sys.exit("usage: interop.py write DIR | check FILE")
    (write if sys.argv[1] == "write" else check)(sys.argv[2])
