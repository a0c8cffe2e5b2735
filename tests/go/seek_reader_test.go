package interop_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func expectPayload(t *testing.T, m pulsar.Message, want string) {
	t.Helper()
	if string(m.Payload()) != want {
		t.Fatalf("got %q (id %v), want %q", m.Payload(), m.ID(), want)
	}
}

// Seek by message id rewinds the subscription to that message even after acks. The broker resets
// the cursor to the message; since pulsar-client-go v0.17 the client then drops the message itself
// unless StartMessageIDInclusive is set (as Java's consumer does; pulsar-client-go issue 919).
func TestSeekByID(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", StartMessageIDInclusive: true})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ids := sendN(t, p, "m", 6)
	for i := range 6 {
		m := receive(t, cons)
		expectPayload(t, m, fmt.Sprintf("m-%d", i))
		ack(t, cons, m)
	}
	if err := cons.Seek(ids[2]); err != nil {
		t.Fatalf("Seek: %v", err)
	}
	for i := 2; i < 6; i++ {
		m := receive(t, cons)
		expectPayload(t, m, fmt.Sprintf("m-%d", i))
		ack(t, cons, m)
	}
	// (Seek(EarliestMessageID()) is refused by the Go client itself: partition index -1.)
	if err := cons.Seek(ids[0]); err != nil {
		t.Fatalf("Seek: %v", err)
	}
	expectPayload(t, receive(t, cons), "m-0")

	// The default (exclusive) consumer resumes after the message.
	excl := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "excl",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	expectPayload(t, receive(t, excl), "m-0")
	if err := excl.Seek(ids[4]); err != nil {
		t.Fatalf("Seek: %v", err)
	}
	expectPayload(t, receive(t, excl), "m-5")
	expectNothing(t, excl)
}

// Seek by time rewinds to the first message published at or after that time.
func TestSeekByTime(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendN(t, p, "before", 3)
	time.Sleep(100 * time.Millisecond)
	mark := time.Now()
	time.Sleep(100 * time.Millisecond)
	sendN(t, p, "after", 3)
	for range 6 {
		ack(t, cons, receive(t, cons))
	}
	expectNothing(t, cons)
	if err := cons.SeekByTime(mark); err != nil {
		t.Fatalf("SeekByTime: %v", err)
	}
	for i := range 3 {
		m := receive(t, cons)
		expectPayload(t, m, fmt.Sprintf("after-%d", i))
		ack(t, cons, m)
	}
	expectNothing(t, cons)
	// A time before everything rewinds to the start.
	if err := cons.SeekByTime(mark.Add(-time.Hour)); err != nil {
		t.Fatalf("SeekByTime: %v", err)
	}
	expectPayload(t, receive(t, cons), "before-0")
}

func readNext(t *testing.T, r pulsar.Reader) pulsar.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
	defer cancel()
	m, err := r.Next(ctx)
	if err != nil {
		t.Fatalf("Reader.Next: %v", err)
	}
	return m
}

func newReader(t *testing.T, c pulsar.Client, opts pulsar.ReaderOptions) pulsar.Reader {
	t.Helper()
	r, err := c.CreateReader(opts)
	if err != nil {
		t.Fatalf("CreateReader: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

// Reader: from earliest, from a message id (exclusive and inclusive), from latest; HasNext.
func TestReader(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ids := sendN(t, p, "m", 5)

	r := newReader(t, c, pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	for i := range 5 {
		m := readNext(t, r)
		expectPayload(t, m, fmt.Sprintf("m-%d", i))
		if !sameID(m.ID(), ids[i]) {
			t.Fatalf("reader id %v, producer's id %v", m.ID(), ids[i])
		}
	}
	if r.HasNext() {
		t.Fatal("HasNext is true at the end of the topic")
	}

	excl := newReader(t, c, pulsar.ReaderOptions{Topic: topic, StartMessageID: ids[2]})
	expectPayload(t, readNext(t, excl), "m-3")
	incl := newReader(t, c, pulsar.ReaderOptions{Topic: topic, StartMessageID: ids[2], StartMessageIDInclusive: true})
	expectPayload(t, readNext(t, incl), "m-2")

	latest := newReader(t, c, pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.LatestMessageID()})
	if latest.HasNext() {
		t.Fatal("a reader at latest has a next message before anything new is published")
	}
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("new")})
	expectPayload(t, readNext(t, latest), "new")

	// Reader.Seek by time on the reader.
	if err := r.SeekByTime(time.Now().Add(-time.Hour)); err != nil {
		t.Fatalf("Reader.SeekByTime: %v", err)
	}
	expectPayload(t, readNext(t, r), "m-0")
}

// The last message id of a topic, through the consumer (GetLastMessageIDs) and the admin API.
func TestGetLastMessageIDs(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ids := sendN(t, p, "m", 3)
	last, err := cons.GetLastMessageIDs()
	if err != nil {
		t.Fatalf("GetLastMessageIDs: %v", err)
	}
	if len(last) != 1 {
		t.Fatalf("GetLastMessageIDs: %d ids, want 1", len(last))
	}
	if last[0].Topic() != topic {
		t.Fatalf("last id's topic %q, want %q", last[0].Topic(), topic)
	}
	if last[0].LedgerID() != ids[2].LedgerID() || last[0].EntryID() != ids[2].EntryID() {
		t.Fatalf("last id %v, want %v", last[0], ids[2])
	}
}
