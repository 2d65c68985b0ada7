"""Writes a catalogue of malformed safetensors files, one per way of breaking a rule of
Note [Strict safetensors] (tally/io/safetensors_reader.cpp), and manifest.tsv: one line per file,
"FILE<TAB>SUBSTRING", the substring the reader's SafetensorsError must contain.

    python3 make_malformed.py OUT_DIR

Standard library only. Every file is generated here, at test time; none is committed.
"""
import json
import os
import struct
import sys

CASES = []  # (file name, bytes, expected substring)


def case(name, data, expect):
    assert all(n != name for n, _, _ in CASES), name
    CASES.append((name + ".safetensors", data, expect))


def raw(header: bytes, data: bytes = b"", length=None) -> bytes:
    """A file: the header length (by default the header's own), the header, the data."""
    return struct.pack("<Q", len(header) if length is None else length) + header + data


def st(header_obj, data: bytes = b"") -> bytes:
    return raw(json.dumps(header_obj).encode(), data)


def f32(shape, begin, end, dtype="F32"):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


GOOD = {"a": f32([2], 0, 8)}
GOOD_DATA = bytes(8)

# --- the 8-byte length and the file's size ---
case("empty", b"", "0 bytes, shorter than the 8-byte header length")
case("short_7_bytes", b"\x02\x00\x00\x00\x00\x00\x00", "7 bytes, shorter than the 8-byte")
case("header_len_2pow63", raw(b"{}", length=2**63), "header length 9223372036854775808 exceeds the limit")
case("header_len_max_u64", raw(b"{}", length=2**64 - 1), "exceeds the limit of 100000000 bytes")
case("header_len_just_over_limit", raw(b"{}", length=100_000_001), "header length 100000001 exceeds the limit")
case("header_len_past_end", raw(b"{}", length=100), "header length 100 runs past the end of the file")
case("header_truncated", raw(json.dumps(GOOD).encode()[:20], length=len(json.dumps(GOOD))), "runs past the end of the file")
case("length_only_nonzero", raw(b"", length=1), "header length 1 runs past the end")
case("header_len_zero", raw(b""), "the header is empty")
case("header_len_off_by_one_short", raw(json.dumps(GOOD).encode(), GOOD_DATA, length=len(json.dumps(GOOD)) - 1),
     "not valid JSON")

# --- UTF-8 ---
case("utf8_invalid_byte", raw(b'{"a\xff": 1}'), "not valid UTF-8 (byte 0xff at header offset 3)")
case("utf8_overlong", raw(b'{"\xc0\xaf": 1}'), "not valid UTF-8")
case("utf8_surrogate", raw(b'{"\xed\xa0\x80": 1}'), "not valid UTF-8")
case("utf8_above_10ffff", raw(b'{"\xf4\x90\x80\x80": 1}'), "not valid UTF-8")
case("utf8_truncated_sequence", raw(b"{}  \xe2\x82"), "not valid UTF-8 (byte 0xe2 at header offset 4)")
case("utf8_lone_continuation", raw(b'{"\x80": 1}'), "not valid UTF-8")

# --- JSON ---
case("json_top_level_array", raw(b"[]"), "not a JSON object: it starts with '['")
case("json_top_level_string", raw(b'"abc"'), "not a JSON object: it starts with '\"'")
case("json_top_level_number", raw(b"42"), "not a JSON object")
case("json_leading_space", raw(b" {}"), "not a JSON object: it starts with ' '")
case("json_syntax_error", raw(b"{abc}"), "not valid JSON")
case("json_unterminated", raw(b'{"a": {"dtype": "F32"'), "not valid JSON")
case("json_trailing_garbage", raw(b"{} x"), "not valid JSON")
case("json_two_objects", raw(b"{}{}"), "not valid JSON")
case("json_nul_padding", raw(b"{}\0\0\0\0\0\0"), "not valid JSON: it holds a NUL byte at header offset 2")
case("json_nul_then_garbage", raw(b'{}\0{"a": 1}'), "NUL byte at header offset 2")
case("json_nul_in_string", raw(b'{"a\0b": 1}'), "NUL byte at header offset 3")
case("json_comment", raw(b"{/* c */}"), "not valid JSON")
case("json_lone_surrogate_escape", raw(b'{"\\ud800": 1}'), "not valid JSON")
case("json_too_deep", raw(b'{"__metadata__": ' + b"[" * 100 + b"]" * 100 + b"}"), "nests JSON more than 64 levels")

# --- duplicate keys (nlohmann would keep the last silently) ---
case("duplicate_tensor", raw(b'{"a": ' + json.dumps(f32([1], 0, 4)).encode() + b', "a": ' +
                             json.dumps(f32([1], 4, 8)).encode() + b"}", bytes(8)), "duplicate key 'a' in the header")
case("duplicate_field", raw(b'{"a": {"dtype": "F32", "dtype": "F64", "shape": [], "data_offsets": [0, 4]}}', bytes(4)),
     "duplicate key 'dtype' in the header (in an object at depth 2)")
case("duplicate_metadata", raw(b'{"__metadata__": {}, "__metadata__": {"k": "v"}}'), "duplicate key '__metadata__'")
case("duplicate_metadata_key", raw(b'{"__metadata__": {"k": "1", "k": "2"}}'), "duplicate key 'k'")

# --- an entry's fields ---
case("entry_is_array", st({"a": [1, 2]}), "tensor 'a': its entry must be an object, got array")
case("entry_is_string", st({"a": "F32"}), "tensor 'a': its entry must be an object, got string")
case("entry_is_null", st({"a": None}), "its entry must be an object, got null")
case("missing_dtype", st({"a": {"shape": [1], "data_offsets": [0, 4]}}, bytes(4)), "tensor 'a': missing field 'dtype'")
case("missing_shape", st({"a": {"dtype": "F32", "data_offsets": [0, 4]}}, bytes(4)), "missing field 'shape'")
case("missing_data_offsets", st({"a": {"dtype": "F32", "shape": [1]}}, bytes(4)), "missing field 'data_offsets'")
case("extra_field", st({"a": dict(f32([1], 0, 4), offsets=[0, 4])}, bytes(4)), "unexpected field 'offsets'")
case("empty_entry", st({"a": {}}), "missing field")
case("dtype_number", st({"a": f32([1], 0, 4, dtype=1)}, bytes(4)), "dtype must be a string, got number")
case("dtype_unknown", st({"a": f32([1], 0, 4, dtype="F33")}, bytes(4)), "tensor 'a': unknown dtype 'F33'")
case("dtype_lowercase", st({"a": f32([1], 0, 4, dtype="f32")}, bytes(4)), "unknown dtype 'f32'")
case("dtype_torch_name", st({"a": f32([1], 0, 4, dtype="float32")}, bytes(4)), "unknown dtype 'float32'")
# Dtypes tally does not compute with are still the format's: their sizes are checked as any.
case("dtype_I16_size", st({"a": f32([4], 0, 4, dtype="I16")}, bytes(4)), "shape [4] of I16 is 4 elements = 8 bytes")
case("dtype_F4_size", st({"a": f32([3], 0, 1, dtype="F4")}, bytes(1)), "shape [3] of F4 is 3 elements = 2 bytes")
case("shape_not_array", st({"a": f32(4, 0, 16)}, bytes(16)), "tensor 'a': shape must be an array of non-negative integers, got number")
case("shape_negative", st({"a": f32([-1], 0, 0)}), "shape[0] must be a non-negative integer, got -1")
case("shape_float", st({"a": f32([2, 2.0], 0, 16)}, bytes(16)), "shape[1] must be a non-negative integer, got 2.0")
case("shape_string", st({"a": f32(["2"], 0, 8)}, bytes(8)), "shape[0] must be a non-negative integer, got \"2\"")
case("shape_nested", st({"a": f32([[2]], 0, 8)}, bytes(8)), "shape[0] must be a non-negative integer, got [2]")
case("shape_beyond_u64", raw(b'{"a": {"dtype": "F32", "shape": [18446744073709551616], "data_offsets": [0, 0]}}'),
     "shape[0] must be a non-negative integer")
case("shape_dim_2pow63", st({"a": f32([2**63], 0, 0)}), "is too large: its element count overflows 64-bit arithmetic")
case("shape_product_overflow", st({"a": f32([2**32, 2**32], 0, 0)}), "its element count overflows 64-bit arithmetic")
case("shape_overflow_with_zero", st({"a": f32([0, 2**40, 2**40], 0, 0)}), "its element count overflows")
case("shape_bytes_overflow", st({"a": f32([2**62], 0, 0, dtype="F64")}), "its byte size overflows 64 bits")
case("offsets_not_array", st({"a": {"dtype": "F32", "shape": [1], "data_offsets": 4}}, bytes(4)),
     "data_offsets must be an array of two non-negative integers")
case("offsets_three", st({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}}, bytes(8)),
     "data_offsets must be an array of two")
case("offsets_one", st({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4]}}, bytes(4)), "data_offsets must be an array of two")
case("offsets_negative", st({"a": f32([1], -4, 0)}, bytes(4)), "data_offsets must be two non-negative integers [begin, end], got [-4,0]")
case("offsets_float", st({"a": f32([1], 0, 4.0)}, bytes(4)), "data_offsets must be two non-negative integers")
case("offsets_begin_after_end", st({"a": f32([0], 8, 4)}, bytes(8)), "data_offsets [8,4] has begin > end")
case("size_mismatch_small", st({"a": f32([2], 0, 4)}, bytes(4)), "shape [2] of F32 is 2 elements = 8 bytes, but data_offsets [0, 4] span 4 bytes")
case("size_mismatch_large", st({"a": f32([1], 0, 8)}, bytes(8)), "span 8 bytes")
case("size_mismatch_bf16", st({"a": f32([3, 1], 0, 3, dtype="BF16")}, bytes(3)), "shape [3, 1] of BF16 is 3 elements = 6 bytes")
case("size_mismatch_scalar", st({"a": f32([], 0, 0)}), "shape [] of F32 is 1 elements = 4 bytes")
case("empty_name", st({"": f32([1], 0, 4)}, bytes(4)), "a tensor has an empty name")

# --- the data section ---
case("hole_at_start", st({"a": f32([1], 4, 8)}, bytes(8)), "a hole in the data section: bytes [0, 4) belong to no tensor")
case("hole_between", st({"a": f32([1], 0, 4), "b": f32([1], 8, 12)}, bytes(12)), "hole in the data section: bytes [4, 8)")
case("hole_empty_tensor_far", st({"a": f32([0], 4, 4)}, bytes(0)), "a hole in the data section")
case("overlap", st({"a": f32([2], 0, 8), "b": f32([1], 4, 8)}, bytes(8)), "tensors overlap")
case("overlap_identical", st({"a": f32([2], 0, 8), "b": f32([2], 0, 8)}, bytes(8)), "tensors overlap: 'b' [0, 8) and 'a' [0, 8)")
case("overlap_contained", st({"a": f32([4], 0, 16), "b": f32([1], 4, 8), "c": f32([1], 16, 20)}, bytes(20)), "tensors overlap")
case("past_end", st({"a": f32([2], 0, 8)}, bytes(4)), "run past the end of the data section (4 bytes")
case("past_end_huge", st({"a": f32([2**30], 0, 2**32)}, bytes(4)), "run past the end of the data section")
case("trailing_bytes", st(GOOD, GOOD_DATA + b"\0"), "1 trailing bytes after the last tensor's data")
case("trailing_bytes_no_tensors", st({}, b"abcd"), "4 trailing bytes")
case("trailing_bytes_metadata_only", st({"__metadata__": {"k": "v"}}, b"\0"), "trailing bytes")

# --- __metadata__ ---
case("metadata_int_value", st({"__metadata__": {"step": 10}}), "__metadata__ value of 'step' must be a string, got number 10")
case("metadata_null_value", st({"__metadata__": {"k": None}}), "__metadata__ value of 'k' must be a string, got null")
case("metadata_nested_object", st({"__metadata__": {"cfg": {"lr": "1"}}}), "value of 'cfg' must be a string, got object")
case("metadata_list_value", st({"__metadata__": {"k": ["a"]}}), "must be a string, got array")
case("metadata_is_array", st({"__metadata__": [["k", "v"]]}), "__metadata__ must be an object of strings, got array")
case("metadata_is_string", st({"__metadata__": "k=v"}), "__metadata__ must be an object of strings, got string")

# --- values: a BOOL byte other than 0 or 1 (found when the tensor is read) ---
case("bool_byte_2", st({"m": f32([3], 0, 3, dtype="BOOL")}, b"\x01\x00\x02"), "tensor 'm' (BOOL) holds byte 2 at element 2")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "manifest.tsv"), "w", encoding="utf-8") as manifest:
        for name, data, expect in CASES:
            assert "\t" not in expect and "\n" not in expect
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
            manifest.write(f"{name}\t{expect}\n")
    print(f"wrote {len(CASES)} malformed safetensors files to {out}")


if __name__ == "__main__":
    main()
