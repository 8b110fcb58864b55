# Reads a pacer trace store with h5py alone: python3 read_store.py STORE.h5
import sys

import h5py
import numpy as np

with h5py.File(sys.argv[1], "r") as f:
    assert f.attrs["pacer_schema"] == 1
    for name, p in f.get("profiles", {}).items():
        knob = p["knob"][:]  # one row per point, one column per knob dimension
        dims = [d.decode() if isinstance(d, bytes) else d for d in p["knob_dims"][:]]
        t = p["time_per_batch_mean"]
        print(f"profile {name}: {len(knob)} points of {p.attrs['workload']}, knob {dims}, "
              f"time per batch {t[:].min():.4g}-{t[:].max():.4g} {t.attrs['unit']}")
    for name, r in f.get("relations", {}).items():
        b, reached, samples = r["batch_size"][:], r["reached"][:] == 1, r["samples"][:]
        mean = {int(x): samples[(b == x) & reached].mean() for x in np.unique(b[reached])}
        ref = mean[max(mean)]
        print(f"relation {name}: r(b) = " + ", ".join(f"{x}:{n / ref:.3g}" for x, n in mean.items()))
        cmd = r.attrs.get("provenance_command_line", b"unknown")  # a fixed-length string: bytes
        print(f"  written by: {cmd.decode() if isinstance(cmd, bytes) else cmd}")
