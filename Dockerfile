# The svc image that docker-compose.yml runs: one binary, every role (`svc up`, `svc ingest`,
# `svc project`, `svc serve`), plus the committed sample of papers for seeding.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin svc

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/svc /usr/local/bin/svc
COPY fixtures/arxiv-sample-3k.jsonl.gz /usr/share/svc/arxiv-sample-3k.jsonl.gz
ENV SVC_DATA_DIR=/var/lib/svc
WORKDIR /var/lib/svc
EXPOSE 3000
ENTRYPOINT ["svc"]
CMD ["up", "--listen", "0.0.0.0:3000"]
