//! The messages of pprof's `profile.proto` (package `perftools.profiles`), written out by hand
//! as prost structs so no protoc or build script is needed.
//!
//! Field numbers and types follow the public `proto/profile.proto` of the pprof project; the
//! comments name each field's meaning there. Strings are indices into
//! [`Profile::string_table`], whose entry 0 must be the empty string; ids are 1-based and 0
//! means "none".

/// A profile: samples with their stacks, and the tables they point into.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each value of a sample measures (field 1).
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples (field 2).
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// Mapped binaries (field 3).
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// Code locations referenced by samples (field 4).
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// Functions referenced by locations (field 5).
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// All strings; entry 0 is "" (field 6).
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Regexp of frames to drop (string index, field 7).
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    /// Regexp of frames to keep (string index, field 8).
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// Collection time, ns since the Unix epoch (field 9).
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// Duration of the collection, ns (field 10).
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// The kind of events between samples (field 11).
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// Events between samples (field 12).
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form comments (string indices, field 13).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// Type of the sample value shown by default (string index, field 14).
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// A value's type and unit (string indices).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    /// e.g. "samples", "cpu" (field 1).
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// e.g. "count", "nanoseconds" (field 2).
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// One sample: a stack (leaf first), values and labels.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// Location ids, leaf first (field 1).
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per sample type (field 2).
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Labels (field 3).
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// A key with a string or a numeric value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// Key (string index, field 1).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// String value (string index, field 2).
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// Numeric value (field 3).
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// Unit of `num` (string index, field 4).
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// A mapped binary.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    /// Unique nonzero id (field 1).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Load address (field 2).
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// End of the mapped range (field 3).
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// File offset of `memory_start` (field 4).
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// Path (string index, field 5).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// Build-id (string index, field 6).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Locations carry function names already (field 7).
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// Locations carry file names (field 8).
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// Locations carry line numbers (field 9).
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// Locations carry inlined frames (field 10).
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// A code location: an address in a mapping and the function(s) there.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    /// Unique nonzero id (field 1).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Mapping id, 0 if none (field 2).
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// Instruction address, 0 if unknown (field 3).
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Functions at this address, innermost inlined first (field 4).
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    /// Folded with its callers (field 5).
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// A function and source line within a location.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    /// Function id (field 1).
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// Source line, 0 if unknown (field 2).
    #[prost(int64, tag = "2")]
    pub line: i64,
    /// Source column, 0 if unknown (field 3).
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// A function.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    /// Unique nonzero id (field 1).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Human-readable (demangled) name (string index, field 2).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Name as the linker knows it (string index, field 3).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Source file (string index, field 4).
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// First line of the function (field 5).
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
