package main

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newClient connects a franz-go client to the bootstrap brokers. The client
// dials lazily; ping makes the first failure a clear one.
func newClient(ctx context.Context, flags *clientFlags, opts ...kgo.Opt) (*kgo.Client, error) {
	brokers := flags.brokers()
	if len(brokers) == 0 {
		return nil, usageError("--bootstrap is empty: give at least one host:port")
	}
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("strata-cli"),
		kgo.RequestRetries(2),
	}, opts...)
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, usageError("%v", err)
	}
	if err := client.Ping(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("cannot reach a broker at %s: %w", flags.bootstrap, err)
	}
	return client, nil
}

// newAdmin is newClient wrapped for admin requests.
func newAdmin(ctx context.Context, flags *clientFlags) (*kadm.Client, func(), error) {
	client, err := newClient(ctx, flags)
	if err != nil {
		return nil, nil, err
	}
	admin := kadm.NewClient(client)
	return admin, client.Close, nil
}
