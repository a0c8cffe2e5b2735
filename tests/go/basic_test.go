package interop_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Produce and consume with batching off and on: payloads, keys, properties and event time arrive
// unchanged and in order; batched messages share an entry and carry their batch index.
func TestProduceConsume(t *testing.T) {
	for _, batching := range []bool{false, true} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			c := newClient(t)
			topic := uniqueTopic(t)
			cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
			opts := pulsar.ProducerOptions{Topic: topic, DisableBatching: !batching}
			if batching {
				opts.BatchingMaxMessages = 5
				opts.BatchingMaxPublishDelay = 50 * time.Millisecond
			}
			p := newProducer(t, c, opts)
			const n = 10
			eventTime := time.UnixMilli(1_700_000_000_123)
			done := make(chan error, n)
			for i := range n {
				p.SendAsync(t.Context(), &pulsar.ProducerMessage{
					Payload:    fmt.Appendf(nil, "m-%d", i),
					Key:        fmt.Sprintf("k-%d", i%3),
					Properties: map[string]string{"i": fmt.Sprint(i)},
					EventTime:  eventTime,
				}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
			}
			if err := p.Flush(); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			for range n {
				if err := <-done; err != nil {
					t.Fatalf("SendAsync: %v", err)
				}
			}
			entries := map[[2]int64]int{}
			for i := range n {
				m := receive(t, cons)
				if got, want := string(m.Payload()), fmt.Sprintf("m-%d", i); got != want {
					t.Fatalf("message %d: payload %q, want %q", i, got, want)
				}
				if m.Key() != fmt.Sprintf("k-%d", i%3) || m.Properties()["i"] != fmt.Sprint(i) {
					t.Fatalf("message %d: key %q properties %v", i, m.Key(), m.Properties())
				}
				if !m.EventTime().Equal(eventTime) {
					t.Fatalf("message %d: event time %v, want %v", i, m.EventTime(), eventTime)
				}
				if m.PublishTime().IsZero() || time.Since(m.PublishTime()) > time.Minute {
					t.Fatalf("message %d: publish time %v", i, m.PublishTime())
				}
				if m.Topic() != topic {
					t.Fatalf("message %d: topic %q, want %q", i, m.Topic(), topic)
				}
				entries[[2]int64{m.ID().LedgerID(), m.ID().EntryID()}]++
				ack(t, cons, m)
			}
			if batching && len(entries) >= n {
				t.Fatalf("batching on: %d messages in %d entries, expected fewer entries", n, len(entries))
			}
			if !batching && len(entries) != n {
				t.Fatalf("batching off: %d messages in %d entries", n, len(entries))
			}
			expectNothing(t, cons)
		})
	}
}

// Acknowledged messages are not delivered again to a new consumer of the subscription; unacked
// ones are, with cumulative ack covering everything up to the message.
func TestAckPersistsAcrossConsumers(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendN(t, p, "m", 6)
	var third pulsar.Message
	for i := range 3 {
		m := receive(t, cons)
		if i == 2 {
			third = m
		}
	}
	if err := cons.AckCumulative(third); err != nil {
		t.Fatalf("AckCumulative: %v", err)
	}
	m := receive(t, cons) // m-3, acked individually
	ack(t, cons, m)
	cons.Close()

	cons2 := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	for _, want := range []string{"m-4", "m-5"} {
		m := receive(t, cons2)
		if string(m.Payload()) != want {
			t.Fatalf("after reconnect got %q, want %q", m.Payload(), want)
		}
	}
	expectNothing(t, cons2)
}

// A subscription created at Earliest reads old messages; one created at Latest does not.
func TestInitialPosition(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendN(t, p, "old", 2)
	early := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "early",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	late := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "late",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionLatest})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("new")})
	for _, want := range []string{"old-0", "old-1", "new"} {
		if got := string(receive(t, early).Payload()); got != want {
			t.Fatalf("earliest: got %q, want %q", got, want)
		}
	}
	if got := string(receive(t, late).Payload()); got != "new" {
		t.Fatalf("latest: got %q, want %q", got, "new")
	}
	expectNothing(t, late)
}
