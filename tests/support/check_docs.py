#!/usr/bin/env python3
"""check_docs.py ROOT CHECK - checks that the README and docs/*.md match the tree at ROOT.

CHECK is one of:
  links      every relative link of README.md and docs/*.md names a file or folder that exists,
             and every #anchor a heading of the target document (GitHub's anchor rules);
  quickstart README.md's "## Quick start" has exactly two ```sh blocks, the demo first and the
             tests second (.ci/run executes the second), and what they run exists: the scripts,
             the CMake presets, and an add_executable for every program under ./build/;
  settings   every setting (SW_...) named in README.md and docs/*.md (but ARCHITECTURE.md) is
             one the agent's parser accepts, and every setting the parser accepts is a row of a
             table in docs/CONFIGURATION.md;
  names      every name docs/ARCHITECTURE.md cites in backticks that looks like a C identifier
             (our prefixes sw_, kp_, dc_, swc_ and their internal forms, or any snake_case name)
             occurs somewhere in the sources.
Sources are found by searching the whole tree by content, never by path, so that files may move.
Exit status 0 when the check passes, 1 with one line per problem on stderr.
"""
import os
import re
import sys

SKIP_DIRS = {".git", "node_modules"}
SOURCE_EXT = (".c", ".h", ".cc", ".cpp", ".hpp", ".cmake", ".sh", ".py", ".map", ".in",
              ".proto", ".json", ".yaml", ".yml")

# Names of other programs that the docs mention beside our settings (not ours to parse).
FOREIGN_SETTINGS = {
    "SW_METER_ANALYZER_ACTIVE_FILES",  # the OAP's environment variable for its MAL files
}


def walk(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs
                   if x not in SKIP_DIRS and not x.startswith("build")]
        for f in files:
            yield os.path.join(d, f)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def docs(root):
    out = [os.path.join(root, "README.md")]
    ddir = os.path.join(root, "docs")
    out += sorted(os.path.join(ddir, f) for f in os.listdir(ddir) if f.endswith(".md"))
    return out


def strip_fences(text):
    """The text with fenced code blocks blanked (lines kept, so line numbers stay)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return out


def anchors(path):
    """GitHub's anchors of a Markdown file's headings."""
    seen, out = {}, set()
    for line in strip_fences(read(path)):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = m.group(1).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", slug)  # drops punctuation and backticks, keeps _ and -
        slug = slug.replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else "%s-%d" % (slug, n))
    return out


def check_links(root):
    problems = []
    for doc in docs(root):
        rel = os.path.relpath(doc, root)
        for no, line in enumerate(strip_fences(read(doc)), 1):
            line = re.sub(r"`[^`]*`", "", line)  # code spans hold no links
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"^[a-z]+:", target):  # https:, mailto:
                    continue
                path, _, anchor = target.partition("#")
                full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
                if not os.path.exists(full):
                    problems.append("%s:%d: link to %s: no such file" % (rel, no, target))
                    continue
                if anchor and full.endswith(".md") and anchor not in anchors(full):
                    problems.append("%s:%d: link to %s: %s has no heading with that anchor"
                                    % (rel, no, target, os.path.relpath(full, root)))
    return problems


def quick_start_blocks(readme):
    blocks, section, block = [], False, None
    for line in read(readme).split("\n"):
        if re.match(r"^##\s+Quick start\s*$", line):
            section = True
            continue
        if section and block is None and re.match(r"^##?\s", line):
            break
        if not section:
            continue
        if block is None and line.startswith("```"):
            block = {"lang": line[3:].strip(), "lines": []}
        elif block is not None and line.startswith("```"):
            blocks.append(block)
            block = None
        elif block is not None:
            block["lines"].append(line)
    return blocks


def check_quickstart(root):
    problems = []
    blocks = quick_start_blocks(os.path.join(root, "README.md"))
    sh = [b for b in blocks if b["lang"] == "sh"]
    if len(blocks) != 2 or len(sh) != 2:
        return ["README.md: Quick start has %d code blocks (%d sh); it must have exactly two sh "
                "blocks, the demo first and the tests second (.ci/run runs the second)"
                % (len(blocks), len(sh))]
    demo, tests = (" ".join(b["lines"]) for b in sh)
    if "sw_demo" not in demo:
        problems.append("README.md: the first Quick start block does not run the demo (sw_demo)")
    if "test" not in tests:
        problems.append("README.md: the second Quick start block does not run the tests")
    presets = read(os.path.join(root, "CMakePresets.json"))
    cmake_text = "\n".join(read(p) for p in walk(root)
                           if p.endswith("CMakeLists.txt") or p.endswith(".cmake"))
    for cmd in (demo, tests):
        for script in re.findall(r"(?:^|[\s;&|])\./(scripts/[\w./-]+)", cmd):
            path = os.path.join(root, script)
            if not os.path.isfile(path) or not os.access(path, os.X_OK):
                problems.append("README.md: Quick start runs ./%s, which is not an executable "
                                "file" % script)
        for preset in re.findall(r"--preset\s+([\w-]+)", cmd):
            if not re.search(r'"name"\s*:\s*"%s"' % re.escape(preset), presets):
                problems.append("README.md: Quick start uses the preset %s, which "
                                "CMakePresets.json does not define" % preset)
        for prog in re.findall(r"\./build/[\w./-]*?/([\w-]+)(?=\s|$)", cmd):
            if not re.search(r"add_executable\(\s*%s\b" % re.escape(prog), cmake_text):
                problems.append("README.md: Quick start runs %s, which no add_executable builds"
                                % prog)
    return problems


def parser_settings(root):
    """The settings the agent reads: the whole string literals "SW_..." of the file that
    defines the settings table (sw__config_key_name), and of every agent file that reads the
    environment itself (getenv, secure_getenv)."""
    found, table_seen = set(), False
    for path in walk(os.path.join(root, "agent")):
        if not path.endswith((".c", ".h")):
            continue
        text = read(path)
        table = re.search(r"^const char \*sw__config_key_name\(", text, re.M) is not None
        table_seen |= table
        if table or re.search(r"\bgetenv\(|\bsecure_getenv\(", text):
            found |= set(re.findall(r'"(SW_[A-Z0-9_]+)"', text))
    return found if table_seen else None


def check_settings(root):
    problems = []
    accepted = parser_settings(root)
    if not accepted:
        return ["no file under agent/ defines sw__config_key_name (the settings table)"]
    # Names that are not settings: the public API's constants, CMake options, the variables
    # the tests read, other programs' settings.
    api = "\n".join(read(p) for p in walk(os.path.join(root, "agent", "include")))
    cmake = "\n".join(read(p) for p in walk(root)
                      if p.endswith(("CMakeLists.txt", ".cmake", "CMakePresets.json")))
    test_env = set()
    for p in walk(os.path.join(root, "tests")):
        if p.endswith(SOURCE_EXT):
            test_env |= set(re.findall(r'getenv\(\s*"(SW_TEST_[A-Z0-9_]+)"', read(p)))
            test_env |= set(re.findall(r"\$\{?(SW_TEST_[A-Z0-9_]+)", read(p)))
    for doc in docs(root):
        if os.path.basename(doc) == "ARCHITECTURE.md":
            continue  # internal names: the names check covers it
        rel = os.path.relpath(doc, root)
        for no, line in enumerate(read(doc).split("\n"), 1):
            for m in re.finditer(r"\b(SW_[A-Z0-9][A-Z0-9_]*[A-Z0-9])\b(\*?)", line):
                name = m.group(1)
                if m.group(2) or name in accepted or name in FOREIGN_SETTINGS or name in test_env:
                    continue  # SW_E*, SW_CYG_*: a family of names
                if re.search(r"\b%s\b" % name, api) or re.search(r"\b%s\b" % name, cmake):
                    continue
                problems.append("%s:%d: %s is not a setting the agent reads (nor a name of "
                                "skywalking.h, a CMake option or a test variable)"
                                % (rel, no, name))
    conf = read(os.path.join(root, "docs", "CONFIGURATION.md"))
    rows = set(re.findall(r"^\|\s*`(SW_[A-Z0-9_]+)`\s*\|", conf, re.M))
    for name in sorted(accepted - rows):
        problems.append("docs/CONFIGURATION.md: the agent reads %s, which no table row "
                        "describes" % name)
    for name in sorted(rows - accepted):
        problems.append("docs/CONFIGURATION.md: a table row describes %s, which the agent does "
                        "not read" % name)
    return problems


def source_words(root):
    words = set()
    for p in walk(root):
        if p.endswith(SOURCE_EXT) or os.path.basename(p) == "CMakeLists.txt":
            words |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", read(p)))
    return words


def check_names(root):
    doc = os.path.join(root, "docs", "ARCHITECTURE.md")
    words = source_words(root)
    ours = re.compile(r"^(sw|kp|dc|swc|SW|KP|DC|SWC)__?[A-Za-z0-9]")
    snake = re.compile(r"^_*[a-z][a-z0-9]*(_[a-z0-9]+)+$")
    problems = []
    for no, line in enumerate(read(doc).split("\n"), 1):
        for span in re.findall(r"`([^`]+)`", line):
            name = re.sub(r"\(\)$", "", span.strip())
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name) or name.endswith("_"):
                continue  # not an identifier, or a prefix (`sw__`)
            if (ours.match(name) or snake.match(name)) and name not in words:
                problems.append("docs/ARCHITECTURE.md:%d: `%s` occurs nowhere in the sources"
                                % (no, name))
    return problems


CHECKS = {"links": check_links, "quickstart": check_quickstart, "settings": check_settings,
          "names": check_names}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CHECKS:
        sys.stderr.write("usage: check_docs.py ROOT {%s}\n" % "|".join(CHECKS))
        return 2
    problems = CHECKS[sys.argv[2]](sys.argv[1])
    for p in problems:
        sys.stderr.write("check_docs %s: %s\n" % (sys.argv[2], p))
    if problems:
        return 1
    print("check_docs %s: the documents match the tree" % sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
