"""Fails if a kernel-pass object defines an external symbol outside its target's namespaces.

Note [CPU kernel dispatch] (tally/kernels/cpu/dispatch.h): the avx2 and avx512 passes compile the
kernel files again with wider instructions. Any inline function or template instantiation they
emitted under a name the baseline pass also emits would be merged by the linker, which keeps one
copy: an AVX-512 copy could then run on a CPU without AVX-512. Code of a kernel pass must have
internal linkage (anonymous namespaces, which nm -g does not list) or live in
tally::kernels::<target> (the kernel headers' inline namespace) or tally::kernels::tables_<target>
(the TALLY_CPU_KERNELS tables), or mention them (a template instantiated with a type of the
target): such names no other pass emits. Nothing else is allowed.

The files built for one instruction set alone (attention_bf16.cpp, attention_f32.cpp) are held to
the same rule with TARGET "isa": each may define only its entry points, the functions named after
its file (tally::kernels::attention_f32_* for attention_f32.cpp.o).

Usage: check_kernel_symbols.py NM TARGET OBJECT_DIR
       check_kernel_symbols.py NM isa OBJECT...
"""
import pathlib
import subprocess
import sys

nm, target = sys.argv[1:3]
# Data, not code, the same in every object: the unwinder's pointer to the C++ personality routine.
exempt = {"DW.ref.__gxx_personality_v0"}
if target == "isa":
    objects = [pathlib.Path(o) for o in sys.argv[3:]]
    missing = [str(o) for o in objects if not o.exists()]
    if missing:
        sys.exit(f"not built: {', '.join(missing)}")
else:
    object_dir = sys.argv[3]
    objects = sorted(pathlib.Path(object_dir).rglob("*.o"))
    if not objects:
        sys.exit(f"no objects under {object_dir}: the {target} kernel pass was not built")


def allowed_in(obj):
    if target == "isa":
        return (f"tally::kernels::{obj.name.split('.')[0]}_",)
    return (f"tally::kernels::{target}::", f"tally::kernels::tables_{target}::")


bad = []
for obj in objects:
    allowed = allowed_in(obj)
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
    print(f"{len(bad)} external symbols outside what {target} objects may define (the linker may pick them for the baseline path):")
    print("\n".join(bad))
    sys.exit(1)
