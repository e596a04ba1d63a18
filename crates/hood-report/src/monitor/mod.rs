//! Renderers for the system monitor (issue 3).
