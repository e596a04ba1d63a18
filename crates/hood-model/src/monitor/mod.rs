//! System monitor model (issue 3).
