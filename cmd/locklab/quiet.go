package main

import (
	"context"
	"io"
	"log"

	"github.com/go-sql-driver/mysql"
	goredis "github.com/redis/go-redis/v9"
)

// quietDrivers stops the drivers' own loggers from writing to locklab's
// stderr: a Sentinel client logs every master it is told of (164 lines in
// one `bench --cluster docker`), go-redis every failed dial, the MySQL
// driver every connection a server restart broke. What a failed request
// means is in the run's results, counted and classified.
func quietDrivers() {
	goredis.SetLogger(discardRedisLog{})
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
}

type discardRedisLog struct{}

func (discardRedisLog) Printf(context.Context, string, ...any) {}
