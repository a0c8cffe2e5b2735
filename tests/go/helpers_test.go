// Package interop_test runs the official Go client (github.com/apache/pulsar-client-go) against a
// pulsar-rs broker whose URLs are given in PULSAR_SERVICE_URL and PULSAR_ADMIN_URL
// (tests/go/test_go_client.py starts one and runs `go test -json ./...`).
package interop_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/sirupsen/logrus"
)

// Short timeouts: a broker that does not answer fails the test instead of hanging it.
const (
	opTimeout      = 10 * time.Second
	receiveTimeout = 5 * time.Second
	// quietWait is how long a test waits to be sure that nothing (more) arrives.
	quietWait = 700 * time.Millisecond
)

func mustEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: these tests need a running broker (see tests/go/test_go_client.py)", name)
	}
	return v
}

func serviceURL(t *testing.T) string { return mustEnv(t, "PULSAR_SERVICE_URL") }

func adminURL(t *testing.T) string {
	return strings.TrimRight(mustEnv(t, "PULSAR_ADMIN_URL"), "/")
}

func quietLogger() plog.Logger {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return plog.NewLoggerWithLogrus(l)
}

func clientOptions(t *testing.T) pulsar.ClientOptions {
	return pulsar.ClientOptions{
		URL:               serviceURL(t),
		OperationTimeout:  opTimeout,
		ConnectionTimeout: 5 * time.Second,
		Logger:            quietLogger(),
	}
}

func newClient(t *testing.T) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(clientOptions(t))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func newAdmin(t *testing.T) pulsaradmin.Client {
	t.Helper()
	a, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: adminURL(t)})
	if err != nil {
		t.Fatalf("pulsaradmin.NewClient: %v", err)
	}
	return a
}

var topicSeq atomic.Int64

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9-]+`)

// uniqueName is a name no other test (or earlier run against the same broker) uses.
func uniqueName(t *testing.T) string {
	base := strings.ToLower(unsafeChars.ReplaceAllString(t.Name(), "-"))
	return fmt.Sprintf("go-%s-%d-%d", base, time.Now().UnixNano()%1_000_000_000, topicSeq.Add(1))
}

func uniqueTopic(t *testing.T) string {
	return "persistent://public/default/" + uniqueName(t)
}

func newProducer(t *testing.T, c pulsar.Client, opts pulsar.ProducerOptions) pulsar.Producer {
	t.Helper()
	if opts.SendTimeout == 0 {
		opts.SendTimeout = opTimeout
	}
	p, err := c.CreateProducer(opts)
	if err != nil {
		t.Fatalf("CreateProducer(%s): %v", opts.Topic, err)
	}
	t.Cleanup(p.Close)
	return p
}

func subscribe(t *testing.T, c pulsar.Client, opts pulsar.ConsumerOptions) pulsar.Consumer {
	t.Helper()
	cons, err := c.Subscribe(opts)
	if err != nil {
		t.Fatalf("Subscribe(%s, %s): %v", opts.Topic, opts.SubscriptionName, err)
	}
	t.Cleanup(cons.Close)
	return cons
}

func send(t *testing.T, p pulsar.Producer, msg *pulsar.ProducerMessage) pulsar.MessageID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	id, err := p.Send(ctx, msg)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	return id
}

// sendN sends "<prefix>-0" ... "<prefix>-(n-1)" and returns their ids.
func sendN(t *testing.T, p pulsar.Producer, prefix string, n int) []pulsar.MessageID {
	t.Helper()
	ids := make([]pulsar.MessageID, n)
	for i := range n {
		ids[i] = send(t, p, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	return ids
}

func receive(t *testing.T, c pulsar.Consumer) pulsar.Message {
	t.Helper()
	return receiveWithin(t, c, receiveTimeout)
}

func receiveWithin(t *testing.T, c pulsar.Consumer, d time.Duration) pulsar.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatalf("Receive on %s: %v", c.Subscription(), err)
	}
	return m
}

// tryReceive returns nil when nothing arrives within d.
func tryReceive(c pulsar.Consumer, d time.Duration) pulsar.Message {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	m, err := c.Receive(ctx)
	if err != nil {
		return nil
	}
	return m
}

func expectNothing(t *testing.T, c pulsar.Consumer) {
	t.Helper()
	if m := tryReceive(c, quietWait); m != nil {
		t.Fatalf("expected no message on %s, got %q (id %v)", c.Subscription(), m.Payload(), m.ID())
	}
}

func ack(t *testing.T, c pulsar.Consumer, m pulsar.Message) {
	t.Helper()
	if err := c.Ack(m); err != nil {
		t.Fatalf("Ack: %v", err)
	}
}

// sameID compares the entry a message id names (the Go client gives an unbatched message batch
// index -1 in the send receipt but 0 when received).
func sameID(a, b pulsar.MessageID) bool {
	return a.LedgerID() == b.LedgerID() && a.EntryID() == b.EntryID() && a.PartitionIdx() == b.PartitionIdx()
}
