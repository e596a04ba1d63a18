# Sourced by the benches that build real C code from the sources Rust's -sys crates bundle.
# crate_dirs WORK CRATE=VERSION...: fetch the crates with `cargo fetch` of a throw-away crate
# under WORK and print "NAME DIRECTORY" per crate (the unpacked crate in cargo's registry).
crate_dirs() {
    _work=$1; shift
    mkdir -p "$_work/fetch/src"
    {
        printf '[package]\nname = "hood-bench-c-sources"\nversion = "0.0.0"\n'
        printf 'edition = "2021"\npublish = false\n\n[dependencies]\n'
        for _c in "$@"; do printf '%s = "=%s"\n' "${_c%%=*}" "${_c#*=}"; done
    } > "$_work/fetch/Cargo.toml"
    : > "$_work/fetch/src/lib.rs"
    (cd "$_work/fetch" && cargo fetch -q)
    _names=""
    for _c in "$@"; do _names="$_names ${_c%%=*}"; done
    # shellcheck disable=SC2086 # one argument per crate name
    (cd "$_work/fetch" && cargo metadata -q --format-version 1) | python3 -c '
import json, sys
want = sys.argv[1:]
for p in json.load(sys.stdin)["packages"]:
    if p["name"] in want:
        print(p["name"], p["manifest_path"].rsplit("/", 1)[0])' $_names
}

# text_file PATH MIB: MIB MiB of generated English-like text (the same words and seed in every
# bench, so runs compare).
text_file() {
    python3 - "$1" "$2" <<'PY'
import random, sys
random.seed(25)
words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "And", "or",
         "Pack", "my", "box", "with", "five", "dozen", "liquor", "jugs", "1999-12", "42-07"]
with open(sys.argv[1], "w") as f:
    size = 0
    while size < int(sys.argv[2]) << 20:
        line = " ".join(random.choice(words) for _ in range(random.randint(2, 12))) + "\n"
        f.write(line)
        size += len(line)
PY
}

# bzip2_sources DIR: the C files of bzip2 1.0.8 in DIR (the bzip2-sys crate's bzip2-1.0.8),
# the program with its library, for `gcc ... $(bzip2_sources "$BZ")`.
bzip2_sources() {
    for _f in bzip2 blocksort huffman crctable randtable compress decompress bzlib; do
        printf '%s/%s.c\n' "$1" "$_f"
    done
}
