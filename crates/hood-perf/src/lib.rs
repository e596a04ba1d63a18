//! See the crate description. All `unsafe` of the perf interface lives here, each block with a `// SAFETY:` comment.
