#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""doc-checks.py CHECK ARGS: the documentation against what the code says.

  cli      --man docs/pmemzctl.1 --pmemzctl BIN
           the synopsis and the COMMANDS list equal the CLI's command table,
           as `pmemzctl --help` and `pmemzctl help COMMAND` print it
  metrics  --man docs/pmemzctl.1 --source client/pmemzctl/metrics.c
           the metric names in the man page equal those the exporter emits
  conf     --man docs/pmemzerod.conf.5 --source daemon/config/conf-ini.c
           the keys in the man page equal the parser's key tables
  plugin   --pod client/nbdkit/nbdkit-pmemz-plugin.pod --nbdkit NBDKIT --plugin SO
           the PARAMETERS of the plugin's man page equal its config_help
  links    ROOT
           every relative link in ROOT/README.md and ROOT/docs/*.md resolves,
           anchors included
  phrases  ROOT [FILE...]
           no file names a working period, a role or a bare tracker number

Exit status: 0 consistent, 1 a difference (each printed), 2 usage, 77 a
program the check runs is missing.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

SKIP = 77

# ---- roff ---------------------------------------------------------------

FONT_MACROS = {"B", "I", "BR", "RB", "IR", "RI", "BI", "IB", "SM", "SB"}
ESCAPES = [(r"\-", "-"), (r"\(em", "--"), (r"\(en", "-"), (r"\(dq", '"'),
           (r"\(lq", '"'), (r"\(rq", '"'), (r"\(*m", "u"), (r"\e", "\\"),
           (r"\&", ""), (r"\~", " "), (r"\ ", " ")]


def roff_text(line):
    """One roff line as plain text: font macros joined, escapes resolved;
    None for other requests."""
    m = re.match(r"^\.([A-Z]{1,2})(?:\s+(.*))?$", line)
    if line.startswith(".") and not (m and m.group(1) in FONT_MACROS):
        return None
    body = m.group(2) or "" if m else line
    body = re.sub(r"\\f[BIRP]|\\f\(..|\\f\[[A-Z]*\]", "", body)
    for k, v in ESCAPES:
        body = body.replace(k, v.replace("\\", "\x00"))
    if m:
        try:
            args = shlex.split(body, posix=True)
        except ValueError:
            args = body.split()
        body = (" " if len(m.group(1)) == 1 else "").join(args)
    return body.replace("\x00", "\\")


def roff_sections(path):
    """{section name: [raw lines]} of a man page."""
    sections, name = {}, ""
    with open(path, encoding="utf-8") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            m = re.match(r'^\.SH\s+"?([^"]*)"?\s*$', raw)
            if m:
                name = m.group(1).strip()
                sections[name] = []
            else:
                sections.setdefault(name, []).append(raw)
    return sections


def tp_tags(lines):
    """The tag line (as text) of every .TP item in lines, outside .RS/.RE
    (items nested in an item are its details)."""
    tags, depth = [], 0
    for i, raw in enumerate(lines):
        if raw.startswith(".RS"):
            depth += 1
        elif raw.startswith(".RE"):
            depth = max(0, depth - 1)
        elif raw.startswith(".TP") and depth == 0 and i + 1 < len(lines):
            text = roff_text(lines[i + 1])
            if text is not None:
                tags.append(text)
    return tags


def same_set(what, documented, actual, where):
    """Print what differs between two sets; True when they are equal."""
    ok = True
    for x in sorted(actual - documented):
        print(f"{where}: {what} '{x}' is missing from the documentation")
        ok = False
    for x in sorted(documented - actual):
        print(f"{where}: {what} '{x}' is documented but the code has none")
        ok = False
    return ok


# ---- cli ----------------------------------------------------------------

def norm_args(s):
    """Command arguments for comparison: short-option alternatives (-w|) and
    spacing aside."""
    s = re.sub(r"(?<![\w-])-[A-Za-z0-9]\|", "", s)
    return " ".join(s.split())


def run_text(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    except OSError as e:
        print(f"cannot run {argv[0]}: {e}")
        sys.exit(SKIP)
    return r.returncode, r.stdout + r.stderr


def cli_table(binary):
    """{command: args} as the CLI prints them."""
    rc, out = run_text([binary, "--help"])
    if rc != 0 or "Commands:" not in out:
        print(f"{binary} --help: exit {rc}, no command list")
        sys.exit(1)
    names = [line.split()[0] for line in out.split("Commands:", 1)[1].splitlines()
             if line.startswith("  ") and line.strip()]
    table = {}
    for name in names:
        rc, usage = run_text([binary, "help", name])
        m = re.search(r"Usage: \S+ \[OPTIONS\] " + re.escape(name) + r"(?: (.*))?$",
                      usage.splitlines()[0] if usage else "")
        if rc != 0 or not m:
            print(f"{binary} help {name}: exit {rc}, no usage line")
            sys.exit(1)
        table[name] = norm_args(m.group(1) or "")
    m = re.search(r"'\S+ help (\S+)'", out)
    if m:
        table["help"] = f"[{m.group(1)}]"
    return table


def man_synopsis(sections, prog):
    """{command: args} of the synopsis entries 'PROG COMMAND ARGS'."""
    entries, cur = [], []
    for raw in sections.get("SYNOPSIS", []):
        if raw.startswith(".br"):
            entries.append(" ".join(cur))
            cur = []
        else:
            text = roff_text(raw)
            if text:
                cur.append(text)
    entries.append(" ".join(cur))
    table = {}
    for e in entries:
        words = e.split(None, 2)
        if len(words) >= 2 and words[0] == prog and re.match(r"^[a-z][a-z-]*$", words[1]):
            table[words[1]] = norm_args(words[2] if len(words) > 2 else "")
    return table


def man_commands(sections):
    """{command: args} of the COMMANDS section's items."""
    table = {}
    for tag in tp_tags(sections.get("COMMANDS", [])):
        words = tag.split(None, 1)
        if words and re.match(r"^[a-z][a-z-]*$", words[0]):
            table[words[0]] = norm_args(words[1] if len(words) > 1 else "")
    return table


def same_table(what, documented, actual, where):
    ok = same_set(what, set(documented), set(actual), where)
    for k in sorted(set(documented) & set(actual)):
        if documented[k] != actual[k]:
            print(f"{where}: {what} '{k}': documented '{documented[k]}', the CLI says '{actual[k]}'")
            ok = False
    return ok


def check_cli(a):
    if not os.access(a.pmemzctl, os.X_OK):
        print(f"{a.pmemzctl}: not built")
        return SKIP
    actual = cli_table(a.pmemzctl)
    sections = roff_sections(a.man)
    ok = same_table("command", man_synopsis(sections, "pmemzctl"), actual, f"{a.man} SYNOPSIS")
    ok &= same_table("command", man_commands(sections), actual, f"{a.man} COMMANDS")
    return 0 if ok else 1


# ---- metrics ------------------------------------------------------------

HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")


def metric_families(names):
    """Metric names without the per-series names of a histogram (the family's
    own name is among the names)."""
    return {n for n in names
            if not any(n.endswith(s) and n[:-len(s)] in names for s in HISTOGRAM_SERIES)}


def check_metrics(a):
    code = set()
    for src in a.source:
        with open(src, encoding="utf-8") as f:
            code |= set(re.findall(r'"(pmemzerod_[a-z0-9_]+)', f.read()))
    text = "\n".join(t for raw in open(a.man, encoding="utf-8").read().splitlines()
                     for t in [roff_text(raw)] if t)
    documented = set(re.findall(r"\b(pmemzerod_[a-z0-9_]+)", text))
    if not code:
        print(f"{' '.join(a.source)}: no metric name found")
        return 1
    ok = same_set("metric", metric_families(documented), metric_families(code), a.man)
    return 0 if ok else 1


# ---- conf ---------------------------------------------------------------

def conf_code_keys(src):
    """Every string of the parser's key tables (arrays named *_keys)."""
    with open(src, encoding="utf-8") as f:
        code = f.read()
    keys = set()
    for body in re.findall(r"\b\w+_keys\s*\[[^\]]*\]\s*=\s*\{(.*?)\};", code, re.S):
        keys |= set(re.findall(r'"([a-z][a-z0-9_]*)"', body))
    return keys


def conf_man_keys(sections):
    """The keys of the .TP items of the [daemon] and [region ...] sections."""
    keys = set()
    for name, lines in sections.items():
        if not name.startswith("["):
            continue
        for tag in tp_tags(lines):
            for part in tag.split(","):
                m = re.match(r"^\s*([a-z][a-z0-9_]*)(?:\s|=|$)", part)
                if m:
                    keys.add(m.group(1))
    return keys


def check_conf(a):
    code = set()
    for src in a.source:
        code |= conf_code_keys(src)
    if not code:
        print(f"{' '.join(a.source)}: no key table found")
        return 1
    ok = same_set("key", conf_man_keys(roff_sections(a.man)), code, a.man)
    return 0 if ok else 1


# ---- plugin -------------------------------------------------------------

def help_params(text):
    """{key: set of values, or None for a placeholder} from config_help."""
    params = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z][a-z0-9-]*)=(\S+)", line)
        if m:
            v = m.group(2)
            params[m.group(1)] = None if v.startswith("<") else set(v.split("|"))
    return params


def pod_params(path):
    """The same from the =item lines of the pod's PARAMETERS section."""
    params, inside = {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("=head1"):
                inside = line.split(None, 1)[1].strip() == "PARAMETERS"
            elif inside and line.startswith("=item"):
                m = re.search(r"B<([a-z][a-z0-9-]*)=([^>]*)>", line)
                if not m:
                    continue
                if m.group(2):
                    params.setdefault(m.group(1), set()).add(m.group(2))
                else:
                    params[m.group(1)] = None
    return params


def check_plugin(a):
    if not os.path.isfile(a.plugin):
        print(f"{a.plugin}: not built")
        return SKIP
    rc, out = run_text([a.nbdkit, a.plugin, "--help"])
    actual = help_params(out)
    if rc != 0 or not actual:
        print(f"{a.nbdkit} {a.plugin} --help: exit {rc}, no parameter found")
        return 1
    documented = pod_params(a.pod)
    ok = same_set("parameter", set(documented), set(actual), f"{a.pod} PARAMETERS")
    for k in sorted(set(documented) & set(actual)):
        if documented[k] != actual[k]:
            d = "|".join(sorted(documented[k])) if documented[k] else "a value"
            c = "|".join(sorted(actual[k])) if actual[k] else "a value"
            print(f"{a.pod} PARAMETERS: '{k}=' documented as {d}, config_help says {c}")
            ok = False
    return 0 if ok else 1


# ---- links --------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def slug(heading):
    """GitHub's anchor of a heading."""
    s = re.sub(r"[`*_]|<[^>]*>", "", heading.strip().lower())
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def md_lines(path):
    """The lines of a Markdown file outside fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced:
                yield n, line


def anchors(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        for _, line in md_lines(path):
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                out.add(s if s not in seen else f"{s}-{seen[s]}")
                seen[s] = seen.get(s, 0) + 1
        cache[path] = out
    return cache[path]


def check_link(root, path, n, target):
    """None, or why target (a link in path at line n) does not resolve."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return None
    file, _, anchor = target.partition("#")
    dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
    if not os.path.exists(dest):
        return f"{os.path.relpath(path, root)}:{n}: '{target}': no such file"
    if anchor and dest.endswith(".md") and anchor not in anchors(dest):
        return f"{os.path.relpath(path, root)}:{n}: '{target}': no such heading"
    return None


def check_links(a):
    root = a.root
    docs = os.path.join(root, "docs")
    files = [os.path.join(root, "README.md")] + sorted(
        os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    bad = 0
    for path in files:
        # whole text outside code, so that a link whose words wrap is seen
        numbered = list(md_lines(path))
        text = "".join(re.sub(r"`[^`\n]*`", "", line) for _, line in numbered)
        for m in LINK.finditer(text):
            n = numbered[text.count("\n", 0, m.start())][0]
            why = check_link(root, path, n, m.group(1))
            if why:
                print(why)
                bad += 1
    return 1 if bad else 0


# ---- phrases ------------------------------------------------------------

ORDINALS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|"
            "eleventh|twelfth|this|previous|earlier|later|last|next|morning|"
            "afternoon|evening|night|working")
# Phrases, not words: 'session' and 'helper' are also code (struct session,
# /proc's session field, helper functions).
PHRASES = [
    (r"\b(?:%s)\s+session\b" % ORDINALS, "a working period"),
    (r"\bthis\s+(?:morning|afternoon|evening|week)\b", "a working period"),
    (r"\bsame\s+(?:morning|afternoon|evening|day)\b", "a working period"),
    (r"\b(?:today|yesterday|tonight)\b", "a working period"),
    (r"\bthe\s+lead(?:'s)?\b", "a role"),
    (r"\b(?:other|another|seven|six|five|four|three|two)\s+helpers?\b(?!\s+(?:function|script|program|thread))",
     "a role"),
    (r"\bother\s+engineers\b", "people outside the product"),
    (r"\bissues?\s+#?\d+\b", "a bare tracker number"),
    (r"\btracker\s+#?\d+\b", "a bare tracker number"),
]
PHRASE_RE = [(re.compile(p, re.I), why) for p, why in PHRASES]


def repo_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True).stdout.decode().split("\0")
        return [os.path.join(root, f) for f in out if f]
    except (OSError, subprocess.CalledProcessError):
        return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
                if ".git" not in d.split(os.sep)]


def phrase_hits(path):
    try:
        with open(path, "rb") as f:
            data = f.read(4 << 20)
    except OSError:
        return
    if b"\0" in data[:8192]:
        return
    for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if "://" in line:
            continue
        for rx, why in PHRASE_RE:
            m = rx.search(line)
            if m:
                yield n, m.group(0), why


# The phrase list and the selftest's examples of it.
PHRASE_LIST_FILES = ("tests/lint/doc-checks.py", "tests/lint/doc-checks-selftest.py")


def check_phrases(a):
    files = a.files or repo_files(a.root)
    bad = 0
    for path in files:
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        if os.path.relpath(path, a.root) in PHRASE_LIST_FILES:
            continue
        for n, phrase, why in phrase_hits(path):
            print(f"{os.path.relpath(path, a.root)}:{n}: '{phrase}' names {why}")
            bad += 1
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = ap.add_subparsers(dest="check", required=True)
    p = sub.add_parser("cli")
    p.add_argument("--man", required=True)
    p.add_argument("--pmemzctl", required=True)
    p.set_defaults(run=check_cli)
    for name, fn in (("metrics", check_metrics), ("conf", check_conf)):
        p = sub.add_parser(name)
        p.add_argument("--man", required=True)
        p.add_argument("--source", required=True, action="append")
        p.set_defaults(run=fn)
    p = sub.add_parser("plugin")
    p.add_argument("--pod", required=True)
    p.add_argument("--nbdkit", default="nbdkit")
    p.add_argument("--plugin", required=True)
    p.set_defaults(run=check_plugin)
    p = sub.add_parser("links")
    p.add_argument("root")
    p.set_defaults(run=check_links)
    p = sub.add_parser("phrases")
    p.add_argument("root")
    p.add_argument("files", nargs="*")
    p.set_defaults(run=check_phrases)
    a = ap.parse_args()
    return a.run(a)


if __name__ == "__main__":
    sys.exit(main())
