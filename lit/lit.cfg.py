# lit configuration of lowp: LLVM 22's lit and FileCheck, tools built by cargo.
#
# Run: /usr/lib/llvm-22/bin/lit lit/   (scripts/test.sh builds the tools first)
# LOWP_BIN_DIR overrides where the tools are (default: target/debug of the checkout).

import os
import shutil

import lit.formats

config.name = "lowp"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")
config.excludes = ["lit.cfg.py", "Output", "Inputs"]

repo = os.path.dirname(config.test_source_root)
bin_dir = os.environ.get("LOWP_BIN_DIR", os.path.join(repo, "target", "debug"))
llvm_bin = os.environ.get("LLVM_BIN_DIR", "/usr/lib/llvm-22/bin")

for tool in ["lowp-opt", "lowp-fmt", "lowp-run", "lowp-translate", "lowp-gpu-run"]:
    path = os.path.join(bin_dir, tool)
    if not os.path.exists(path):
        lit_config.fatal(f"{path} not found: build it first (cargo build --workspace)")
    config.substitutions.append((r"\b%s\b" % tool.replace("-", r"\-"), path))

# MLIR's runtime libraries (vector.print's printF32) for mlir-runner: %mlir_lib.
config.substitutions.append(("%mlir_lib", os.path.join(os.path.dirname(llvm_bin), "lib")))

# FileCheck, not, count, mlir-runner from LLVM 22 come first on PATH.
config.environment["PATH"] = os.pathsep.join([llvm_bin, config.environment.get("PATH", "")])

# GPU tests say `REQUIRES: cuda`; they run only where a CUDA driver is present.
if os.path.exists("/dev/nvidiactl") or shutil.which("nvidia-smi"):
    config.available_features.add("cuda")

# CPU kernels that need x86 instructions say `REQUIRES: x86-avx2` (lowp-to-loops{dot=i8}),
# `REQUIRES: x86-avx512_vnni, x86-avx512vl` (dot=vnni with 8 lanes), `REQUIRES:
# x86-avx512_bf16, x86-avx512vl` (bf16-dot=true with 8 lanes) or `REQUIRES: x86-f16c`
# (lowp-to-loops{decode=f16}).
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line for line in cpuinfo if line.startswith("flags")), "").split()
    for flag in ["avx2", "f16c", "avx512_vnni", "avx512_bf16", "avx512vl"]:
        if flag in flags:
            config.available_features.add("x86-" + flag)
except OSError:
    pass

# Tests that assemble kernels with NVIDIA's ptxas say `REQUIRES: ptxas`, those that read the
# SASS it made `REQUIRES: nvdisasm`: the tool named by PTXAS / NVDISASM, or the one
# scripts/ptxas.sh takes out of its wheel (nvidia-cuda-nvcc-cu12, nvidia-cuda-nvdisasm),
# or the one on PATH.
for tool in ("ptxas", "nvdisasm"):
    path = os.environ.get(tool.upper()) or os.path.join(repo, "target", "ptxas", "bin", tool)
    if not os.path.exists(path):
        path = shutil.which(tool)
    if path:
        config.available_features.add(tool)
        config.substitutions.append((r"\b%s\b" % tool, path))
