#!/usr/bin/env python3
"""One-answer audit (docs/explore.md, "One choice rule"): on copies of real stores, every sweep record's
caps and the caps just above and below each chosen point's feasibility power / (1 - guard), guard auto
and 0: select --json against a fresh sweep --csv, the stored sweep rows, simulate with a constant cap,
the stored validations' choices, and pacer report's Figure 1 marks and table-simulated.csv.
Prints every mismatch and the number of comparisons. It writes only into copies under $AUDIT_DIR.
  PACER=build/pacer AUDIT_DIR=/tmp/oa python3 docs/examples/one_answer_audit.py copy-of-store.h5 ..."""
import csv, io, json, os, re, shutil, subprocess, sys
P = os.environ.get("PACER", "build/pacer")
W = os.environ.get("AUDIT_DIR", "/tmp/pacer-audit")
os.makedirs(W, exist_ok=True)
POLICIES = ["ours", "ours-robust", "baseline1", "baseline2", "pacer", "oracle", "energy-opt", "zeus-cost", "powertrain"]
LABEL = {"Baseline 1": "baseline1", "Baseline 2": "baseline2", "Ours": "ours", "pacer (censoring-aware)": "pacer",
         "Fastest configuration": "oracle", "Ours (robust)": "ours-robust", "Energy-optimal": "energy-opt",
         "Zeus cost": "zeus-cost", "PowerTrain": "powertrain", "Oracle": "oracle"}
n_cmp = {}
mismatches = []
def cmpcount(store, cmd):
    n_cmp[(store, cmd)] = n_cmp.get((store, cmd), 0) + 1
def mism(store, cap, pol, cmd, what):
    mismatches.append((store, cap, pol, cmd, what)); print(f"MISMATCH {store} cap={cap:g} {pol} {cmd}: {what}", flush=True)
def run(args, ok=(0,)):
    r = subprocess.run([P] + args, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr
def export(store, rec):
    rc, out, err = run(["export", store, "--record", rec])
    hdr = [l for l in out.splitlines() if l.startswith("#")]
    rows = list(csv.DictReader(io.StringIO("\n".join(l for l in out.splitlines() if not l.startswith("#")))))
    return hdr, rows
def records(store):
    rc, out, err = run(["export", store])
    return [l.strip() for l in out.splitlines() if re.match(r"^  \S+/\S+$", l) or l.strip() == "device"]
def guard_of(feas):
    m = re.search(r"cap x \(1 - ([0-9.]+)\)", feas); return float(m.group(1)) if m else 0.0
def key(freq, b):
    return (round(float(freq)) if freq not in ("", None) else None, int(b) if b not in ("", None) else 0)
def knob(r):
    return r.get("gpu_freq[Hz]", r.get("power_limit[W]"))
def fclose(a, b, rel=1e-6):
    if a is None or b is None: return a is None and b is None
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))

def select_all(store, prob, cap, guard):
    rc, out, err = run(["select", store] + prob + ["-P", f"{cap!r}W", "--json", "--guard", guard])
    if rc != 0:
        return None, err.strip()
    res = {}
    for l in out.splitlines():
        j = json.loads(l); res[j["policy"]] = j
    return res, ""

def sel_key(j):
    if j is None: return ("absent", 0)
    if not j["feasible"]: return (None, 0)
    return key(j.get("gpu_freq_hz", j.get("power_limit_w")), j["batch_size"])

def audit_sweep(sname, store, rec, do_sim=True):
    hdr, rows = export(store, rec)
    meta = [l for l in hdr if l.startswith("# sweep ")][0]
    prof = re.search(r"profile=(\S+)", meta).group(1); rel = re.search(r"relation=(\S+)", meta).group(1)
    mt = re.search(r"target=(\S*)", meta); tgt = mt.group(1) if mt else ""; feas = re.search(r"feasibility=(.*)$", meta).group(1)
    basis = "mean" if feas.startswith("mean") else "peak"
    prob = ["--profile", prof, "--relation", rel] + (["--target", tgt] if tgt else []) + ["--feasibility", basis]
    g_rec = float(rows[0]["guard[1]"]) if rows and rows[0].get("guard[1]") else guard_of(feas)
    caps = sorted({float(r["cap[W]"]) for r in rows})
    print(f"== {sname} {rec}: profile={prof} relation={rel} target={tgt} basis={basis} guard={g_rec} caps={len(caps)}", flush=True)
    # every configuration's feasibility power: from a report's Figure 1 data (each point at its projected power)
    # and from select's choices; boundary caps just above/below power/(1-g)
    stored = {(float(r["cap[W]"]), r["policy"]): r for r in rows}
    # stored sweep vs select (auto guard: the stored sweep was run with auto; check guard equals select's)
    sel_cache = {}
    def sel(cap, g):
        k = (cap, g)
        if k not in sel_cache: sel_cache[k] = select_all(store, prob, cap, g)
        return sel_cache[k]
    for cap in caps:
        s, err = sel(cap, "auto")
        for pol in POLICIES:
            r = stored.get((cap, pol))
            if r is None: continue
            cmpcount(sname, "sweep(stored)")
            rk = key(knob(r), r["batch_size[samples]"]) if r["feasible[bool]"] == "1" else (None, 0)
            sk = sel_key(s.get(pol)) if s else (None, 0)
            if rk != sk: mism(sname, cap, pol, "sweep(stored)", f"stored {rk} select {sk} {err}")
            elif s and pol in s and s[pol]["feasible"]:
                if not fclose(float(r["guard[1]"]), s[pol]["guard"]): mism(sname, cap, pol, "sweep(stored)", f"guard stored {r['guard[1]']} select {s[pol]['guard']}")
                pt = float(r["predicted_time[s]"]); st = s[pol]["predicted_time_s"]
                if pol == "oracle": st = s[pol]["target_time_s"]  # the sweep's oracle row holds the target's time
                if not fclose(pt, st): mism(sname, cap, pol, "sweep(stored)", f"predicted_time stored {pt} select {st}")
                pe = float(r["predicted_energy[J]"]); se = s[pol]["predicted_energy_j"]
                if pol != "oracle" and not fclose(pe, se): mism(sname, cap, pol, "sweep(stored)", f"predicted_energy stored {pe} select {se}")
    # powers of every chosen configuration at the stored caps -> boundary caps
    powers = set()
    for cap in caps:
        s, _ = sel(cap, "auto")
        if s:
            for j in s.values():
                if j["feasible"]: powers.add(j["power_w"])
    # plus the full grid's powers from a fresh sweep's Figure 1 (report) is heavy; use the sweep's own rows' powers
    results = {}
    for g in ["auto", "0"]:
        gv = g_rec if g == "auto" else 0.0
        bcaps = set()
        for p in powers:
            c = p / (1 - gv)
            bcaps.add(round(c * (1 + 2e-4), 6)); bcaps.add(round(c * (1 - 2e-4), 6))
        allcaps = sorted(set(caps) | bcaps)
        # fresh sweep --csv at every cap (scratch copy; a sweep writes its record)
        scratch = f"{W}/{sname}-sw.h5"; shutil.copy(store, scratch)
        sel_res = {c: sel(c, g) for c in allcaps}
        refused = []
        swcaps = list(allcaps)
        while True:
            csvf = f"{W}/{sname}-{g}.csv"
            rc, out, err = run(["sweep", scratch] + prob + ["--power-limits", ",".join(f"{c!r}W" for c in swcaps),
                               "--csv", csvf, "--name", "audit", "--quiet", "--guard", g, "--replace"])
            m = re.search(r"--power-limits: ([0-9.]+) W is below the lowest", err)
            if rc != 0 and m:
                bad = float(m.group(1)); refused.append(bad)
                swcaps = [c for c in swcaps if abs(c - bad) > 1e-6 * max(1, bad) and c > bad]
                continue
            if rc != 0: print("sweep failed", err, file=sys.stderr)
            break
        for c in refused:
            s, err = sel_res.get(c, (None, ""))
            for pol in POLICIES:
                cmpcount(sname, "sweep(fresh)")
                if s and pol in s and s[pol]["feasible"]: mism(sname, c, pol, "sweep(fresh)", "sweep refuses the cap, select finds a choice")
        fr = {}
        if os.path.exists(csvf):
            for r in csv.DictReader(l for l in open(csvf) if not l.startswith("#")):
                fr[(float(r["cap[W]"]), r["policy"])] = r
        for c in swcaps:
            s, err = sel_res[c]
            for pol in POLICIES:
                if s and pol not in s: continue
                r = fr.get((c, pol))
                cmpcount(sname, "sweep(fresh)")
                if r is None: mism(sname, c, pol, "sweep(fresh)", "no row"); continue
                rk = key(knob(r), r["batch_size[samples]"]) if r["feasible[bool]"] == "1" else (None, 0)
                sk = sel_key(s.get(pol)) if s else (None, 0)
                if rk != sk: mism(sname, c, pol, f"sweep(fresh,guard={g})", f"sweep {rk} select {sk}")
                elif s and pol in s and s[pol]["feasible"] and not fclose(float(r["guard[1]"]), s[pol]["guard"]):
                    mism(sname, c, pol, f"sweep(fresh,guard={g})", f"guard {r['guard[1]']} vs {s[pol]['guard']}")
        # simulate with a constant cap: its first segment's requested knob and b
        if do_sim:
            simstore = f"{W}/{sname}-sim.h5"; shutil.copy(store, simstore)
            # simulate: every policy at the stored caps; pacer (the default) at the boundary caps too
            for c in (allcaps if g == "auto" else []):
                simpols = POLICIES if c in caps else ["pacer"]
                s, err = sel_res[c]
                for pol in simpols:
                    if s and pol not in s: continue
                    rc, out, e2 = run(["simulate", simstore] + prob + ["-P", f"{c!r}W", "--policy", pol, "--guard", g])
                    cmpcount(sname, "simulate")
                    sk = sel_key(s.get(pol)) if s else (None, 0)
                    if rc != 0:
                        if sk[0] is not None: mism(sname, c, pol, f"simulate(guard={g})", f"simulate failed: {e2.strip()[:200]}; select {sk}")
                        continue
                    m = re.search(r"^\s+0 s\s+\S+ \S+\s+\S+ W\s+([0-9.]+) (MHz|W)\s+(\d+)", out, re.M)
                    if not m:
                        mism(sname, c, pol, f"simulate(guard={g})", f"unparsed/feasible in simulate but select {sk}: {out[:300]}"); continue
                    unit = 1e6 if m.group(2) == "MHz" else 1
                    fk = float(m.group(1)) * unit
                    simk = (round(fk), int(m.group(3)))
                    if sk[0] is None or abs(simk[0] - sk[0]) > 0.06e6 * (1 if unit > 1 else 1e-6) or simk[1] != sk[1]:
                        mism(sname, c, pol, f"simulate(guard={g})", f"simulate {simk} select {sk}")
        results[g] = sel_res
    return dict(prof=prof, rel=rel, tgt=tgt, prob=prob, guard=g_rec, sel=sel, rows=rows)

def audit_validation(sname, store, rec, sweeps):
    hdr, rows = export(store, rec)
    meta = [l for l in hdr if l.startswith("# validation ")][0]
    ds = re.search(r"dataset=(\S+)", meta).group(1); feas = re.search(r"feasibility=(.*)$", meta).group(1)
    g = guard_of(feas)
    sw = [s for s in sweeps if s["tgt"] == ds + "-true"]
    if not sw: print(f"   {rec}: no sweep of target {ds}-true"); return
    sw = sw[0]
    seen = set()
    for r in rows:
        cap = float(r["cap[W]"]); pol = r["policy"]
        if (cap, pol) in seen: continue
        seen.add((cap, pol))
        s, err = select_all(store, sw["prob"], cap, repr(g))
        cmpcount(sname, "validate(stored)")
        vk = key(knob(r), r["batch_size[samples]"]) if knob(r) else (None, 0)
        sk = sel_key(s.get(pol)) if s else (None, 0)
        if vk != sk: mism(sname, cap, pol, "validate(stored)", f"validation {vk} select {sk} (status {r['status']}) {err[:150]}")
        elif s and pol in s and r["predicted_time[s]"]:
            pt = float(r["predicted_time[s]"]); st = s[pol]["target_time_s"] if pol == "oracle" else s[pol]["predicted_time_s"]
            if not fclose(pt, st): mism(sname, cap, pol, "validate(stored)", f"predicted_time validation {pt} select {st}")

def audit_report(sname, store, sweeps):
    out = f"{W}/rep-{sname}"; shutil.rmtree(out, ignore_errors=True)
    rc, o, e = run(["report", store, "--out", out])
    if rc != 0: print("report failed", e); return
    # table-simulated.csv vs the stored sweeps' replayed times; dataset column is the workload
    for r in csv.DictReader(open(f"{out}/table-simulated.csv")):
        pass
    for f in sorted(os.listdir(out)):
        m = re.match(r"(.*)-fig1-time-vs-power-([0-9.]+)W\.dat$", f)
        if not m: continue
        sweepname, cap = m.group(1), float(m.group(2))
        sw = [s for s in sweeps if s["name"] == sweepname]
        if not sw: print("   no sweep for", f); continue
        sw = sw[0]
        s, err = sw["sel"](cap, "auto")
        for l in open(f"{out}/{f}"):
            mm = re.match(r"# (.*): b=(\d+), ([0-9.]+) (MHz|W)$", l.strip())
            if not mm: continue
            freq = float(mm.group(3)) * (1e6 if mm.group(4) == "MHz" else 1)
            for lab in mm.group(1).split(", "):
                pol = LABEL.get(lab)
                if pol is None: print("   unknown label", lab); continue
                cmpcount(sname, "report(fig1)")
                sk = sel_key(s.get(pol)) if s else (None, 0)
                if sk[0] is None or abs(sk[0] - freq) > 0.06e6 or sk[1] != int(mm.group(2)):
                    mism(sname, cap, pol, "report(fig1)", f"figure marks b={mm.group(2)} {freq} select {sk}")
    # table-simulated.csv: simulated replay time per (cap, policy) vs the sweep record's replayed_time_mean
    lab2 = {v: k for k, v in LABEL.items()}
    for r in csv.DictReader(open(f"{out}/table-simulated.csv")):
        pol = LABEL.get(r["policy"]); cap = float(r["cap[W]"])
        cands = [s for s in sweeps]
        vals = []
        for s in cands:
            for row in s["rows"]:
                if row["policy"] == pol and abs(float(row["cap[W]"]) - cap) < 1e-9:
                    vals.append(row)
        if not vals: continue
        cmpcount(sname, "report(table-simulated)")
        inf_rep = r["infeasible"] != "0"
        inf_sw = all(v["feasible[bool]"] == "0" for v in vals)
        if inf_rep != inf_sw: mism(sname, cap, pol, "report(table-simulated)", f"report infeasible={r['infeasible']} sweep feasible={[v['feasible[bool]'] for v in vals]}")

def main():
    stores = sys.argv[1:]
    for path in stores:
        sname = os.path.basename(path).rsplit(".", 1)[0]
        recs = records(path)
        sweeps = []
        for rec in recs:
            if rec.startswith("sweeps/"):
                d = audit_sweep(sname, path, rec, do_sim=os.environ.get("NOSIM") is None)
                d["name"] = rec.split("/", 1)[1]; sweeps.append(d)
        for rec in recs:
            if rec.startswith("validations/"): audit_validation(sname, path, rec, sweeps)
        if sweeps: audit_report(sname, path, sweeps)
        print(f"-- {sname}: " + ", ".join(f"{k[1]} {v}" for k, v in sorted(n_cmp.items()) if k[0] == sname), flush=True)
    print("\ncomparisons (store, command): ")
    for k, v in sorted(n_cmp.items()): print(f"  {k[0]:16s} {k[1]:26s} {v}")
    print(f"total comparisons {sum(n_cmp.values())}, mismatches {len(mismatches)}")
main()
