package main

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/andybalholm/brotli"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/opensearch-project/opensearch-go/v4"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/redis/go-redis/v9"
	_ "google.golang.org/protobuf/proto"
)

func main() {}
