//! `svc log export`: a stretch of the log as a file for analytics, JSON lines or Parquet.
//! Reads the log itself: the Kafka topic while svc runs, or the data directory's log with
//! svc stopped. The privacy rule is the live stream's (`query_api::tap`): public events,
//! or with `--all` every event with its secrets redacted.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Arc;

use anyhow::Context as _;
use arrow_array::builder::{StringBuilder, TimestampMicrosecondBuilder, UInt16Builder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use eventlog::cursor::Cursor;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use query_api::tap::{self, Audience};
use serde_json::Value;

use super::log::Merged;
use super::{open_log_to_read, require_log};
use crate::config::ExportArgs;

/// Rows per Parquet row group batch written at once.
const BATCH_ROWS: usize = 8192;

/// `svc log export`: prints a JSON line with what it wrote.
pub fn export(args: ExportArgs) -> anyhow::Result<()> {
    let from: Cursor = args.from.parse().with_context(|| format!("--from {:?}", args.from))?;
    let to: Option<Cursor> = args.to.as_deref().map(|t| t.parse().with_context(|| format!("--to {t:?}"))).transpose()?;
    let audience = if args.all { Audience::Admin } else { Audience::Public };
    let filter = args.filter.filter(audience).map_err(|e| match audience {
        Audience::Public if e.code() == query_api::error::ErrorCode::Forbidden => anyhow::anyhow!("{} (add --all)", e.message()),
        _ => anyhow::anyhow!("{}", e.message()),
    })?;
    require_log(&args.data, "export")?;
    let log = open_log_to_read(&args.data)?;
    let start = from.resolve(log.as_ref())?;
    let until = match &to {
        Some(to) => to.resolve(log.as_ref())?,
        None => log.end_offsets()?,
    };
    let file = File::create(&args.file).with_context(|| format!("cannot write {}", args.file.display()))?;
    let mut sink = match args.format.as_str() {
        "parquet" => Sink::Parquet(Box::new(ParquetSink::new(file)?)),
        _ => Sink::Jsonl(BufWriter::new(file)),
    };
    let mut events = Merged::new(log.as_ref(), start.clone(), Some(until.clone()));
    let mut written = 0u64;
    while let Some(event) = events.next_event()? {
        if !filter.admits(&event) {
            continue;
        }
        let Some(json) = tap::view(&event, audience) else { continue };
        sink.write(&event, json)?;
        written += 1;
    }
    sink.finish()?;
    let summary = serde_json::json!({
        "file": args.file.display().to_string(),
        "format": args.format,
        "events": written,
        "from": eventlog::cursor::format(&start),
        "to": eventlog::cursor::format(&until),
    });
    println!("{summary}");
    Ok(())
}

/// Where the events go.
enum Sink {
    Jsonl(BufWriter<File>),
    Parquet(Box<ParquetSink>),
}

impl Sink {
    fn write(&mut self, event: &event_schema::Envelope, json: Value) -> anyhow::Result<()> {
        match self {
            Sink::Jsonl(out) => writeln!(out, "{json}").context("writing the export failed"),
            Sink::Parquet(sink) => sink.push(event, &json),
        }
    }

    fn finish(self) -> anyhow::Result<()> {
        match self {
            Sink::Jsonl(mut out) => out.flush().context("writing the export failed"),
            Sink::Parquet(sink) => sink.close(),
        }
    }
}

/// A Parquet file of events: a row per event; the position, time, kind, key, schema
/// version, repository, collection, record key and source type as typed columns; the
/// source and payload as JSON text (as the stream shows them).
struct ParquetSink {
    writer: ArrowWriter<File>,
    schema: SchemaRef,
    rows: Rows,
}

/// The columns being filled.
#[derive(Default)]
struct Rows {
    partition: UInt32Builder,
    offset: UInt64Builder,
    appended_at: TimestampMicrosecondBuilder,
    kind: StringBuilder,
    key: StringBuilder,
    schema_version: UInt16Builder,
    did: StringBuilder,
    collection: StringBuilder,
    rkey: StringBuilder,
    source_type: StringBuilder,
    source: StringBuilder,
    payload: StringBuilder,
    len: usize,
}

impl ParquetSink {
    fn new(file: File) -> anyhow::Result<ParquetSink> {
        let text = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
        let schema = Arc::new(Schema::new(vec![
            Field::new("partition", DataType::UInt32, false),
            Field::new("offset", DataType::UInt64, false),
            Field::new("appended_at", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), false),
            text("kind", false),
            text("key", false),
            Field::new("schema_version", DataType::UInt16, false),
            text("did", false),
            text("collection", true),
            text("rkey", true),
            text("source_type", false),
            text("source", false),
            text("payload", false),
        ]));
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).context("cannot start the Parquet file")?;
        Ok(ParquetSink { writer, schema, rows: Rows::default() })
    }

    fn push(&mut self, event: &event_schema::Envelope, json: &Value) -> anyhow::Result<()> {
        let r = &mut self.rows;
        r.partition.append_value(event.position.partition);
        r.offset.append_value(event.position.offset);
        r.appended_at.append_value(event.appended_at.timestamp_micros());
        r.kind.append_value(&event.kind);
        r.key.append_value(&event.key);
        r.schema_version.append_value(event.schema_version);
        r.did.append_value(event.payload.did());
        let record = event.payload.record();
        r.collection.append_option(record.map(|(collection, _)| collection));
        r.rkey.append_option(record.map(|(_, rkey)| rkey));
        r.source_type.append_value(json["source"]["type"].as_str().unwrap_or_default());
        r.source.append_value(json["source"].to_string());
        r.payload.append_value(json["payload"].to_string());
        r.len += 1;
        if r.len >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        if self.rows.len == 0 {
            return Ok(());
        }
        let mut r = std::mem::take(&mut self.rows);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(r.partition.finish()),
            Arc::new(r.offset.finish()),
            Arc::new(r.appended_at.finish().with_timezone("UTC")),
            Arc::new(r.kind.finish()),
            Arc::new(r.key.finish()),
            Arc::new(r.schema_version.finish()),
            Arc::new(r.did.finish()),
            Arc::new(r.collection.finish()),
            Arc::new(r.rkey.finish()),
            Arc::new(r.source_type.finish()),
            Arc::new(r.source.finish()),
            Arc::new(r.payload.finish()),
        ];
        let batch = RecordBatch::try_new(self.schema.clone(), columns).context("building a batch of rows failed")?;
        self.writer.write(&batch).context("writing the Parquet file failed")
    }

    fn close(mut self) -> anyhow::Result<()> {
        self.flush()?;
        self.writer.close().context("finishing the Parquet file failed")?;
        Ok(())
    }
}
