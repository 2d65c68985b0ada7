"""Fails if a kernel-pass object defines an external symbol outside its target's namespaces.

Note [CPU kernel dispatch] (tally/kernels/cpu/dispatch.h): the avx2 and avx512 passes compile the
kernel files again with wider instructions. Any inline function or template instantiation they
emitted under a name the baseline pass also emits would be merged by the linker, which keeps one
copy: an AVX-512 copy could then run on a CPU without AVX-512. Code of a kernel pass must have
internal linkage (anonymous namespaces, which nm -g does not list) or live in
tally::kernels::<target> (the kernel headers' inline namespace) or tally::kernels::tables_<target>
(the TALLY_CPU_KERNELS tables), or mention them (a template instantiated with a type of the
target): such names no other pass emits. Nothing else is allowed.

Usage: check_kernel_symbols.py NM TARGET OBJECT_DIR
"""
import pathlib
import subprocess
import sys

nm, target, object_dir = sys.argv[1:4]
allowed = (f"tally::kernels::{target}::", f"tally::kernels::tables_{target}::")
# Data, not code, the same in every object: the unwinder's pointer to the C++ personality routine.
exempt = {"DW.ref.__gxx_personality_v0"}
objects = sorted(pathlib.Path(object_dir).rglob("*.o"))
if not objects:
    sys.exit(f"no objects under {object_dir}: the {target} kernel pass was not built")
bad = []
for obj in objects:
    out = subprocess.run([nm, "-C", "-g", "--defined-only", str(obj)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) < 3:
            continue
        name = parts[2]
        # A name that mentions the target's namespace (its own, or as a template argument) is one
        # no other pass emits.
        if name not in exempt and not any(a in name for a in allowed):
            bad.append(f"{obj.name}: {parts[1]} {name}")
print(f"{len(objects)} {target} objects checked")
if bad:
    print(f"{len(bad)} external symbols outside tally::kernels::{target} (the linker may pick them for the baseline path):")
    print("\n".join(bad))
    sys.exit(1)
