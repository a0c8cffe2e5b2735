package interop_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

func enableDeduplication(t *testing.T, topic string) {
	t.Helper()
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		t.Fatal(err)
	}
	admin := newAdmin(t)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := admin.Topics().CreateWithContext(ctx, *tn, 0); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	if err := admin.Topics().SetDeduplicationStatusWithContext(ctx, *tn, true); err != nil {
		t.Fatalf("enable deduplication on %s: %v", topic, err)
	}
	// Topic policies apply asynchronously in Pulsar: wait until the broker reports it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		on, err := admin.Topics().GetDeduplicationStatusWithContext(ctx, *tn)
		if err == nil && on {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("deduplication on %s not reported enabled: %v, %v", topic, on, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Deduplication by producer name and sequence id: explicit sequence ids at or below the last
// stored one are dropped, also for a new producer with the same name, which learns the last
// sequence id from the broker.
func TestDeduplicationExplicitSequenceIDs(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	enableDeduplication(t, topic)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	opts := pulsar.ProducerOptions{Topic: topic, Name: "dedup-producer", DisableBatching: true}
	p, err := c.CreateProducer(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.LastSequenceID(); got != -1 {
		t.Fatalf("a new producer name's LastSequenceID is %d, want -1", got)
	}
	seq := func(p pulsar.Producer, s int64) {
		t.Helper()
		send(t, p, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "seq-%d", s), SequenceID: &s})
	}
	// (The Go client's LastSequenceID is the sequence id of the last receipt, duplicates included.)
	for _, s := range []int64{0, 1, 0, 2, 1, 2} {
		seq(p, s)
	}
	p.Close()

	// The re-created producer continues after the broker's last sequence id (ProducerSuccess's
	// last_sequence_id): its next automatic sequence id is 3, which is stored. (The Go client's
	// LastSequenceID() only follows send receipts.)
	p2 := newProducer(t, c, opts)
	send(t, p2, &pulsar.ProducerMessage{Payload: []byte("auto")})
	if got := p2.LastSequenceID(); got != 3 {
		t.Fatalf("re-created producer's first automatic sequence id is %d, want 3 (last stored 2, from the broker)", got)
	}
	for _, s := range []int64{2, 3, 10, 5} {
		seq(p2, s)
	}
	var got []string
	for _, m := range drain(t, cons) {
		got = append(got, string(m.Payload()))
	}
	want := []string{"seq-0", "seq-1", "seq-2", "auto", "seq-10"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored %v, want %v (duplicates dropped)", got, want)
	}
	// Another producer name has its own sequence.
	other := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, Name: "other", DisableBatching: true})
	seq(other, 0)
	if m := receive(t, cons); string(m.Payload()) != "seq-0" {
		t.Fatalf("other producer's seq 0: got %q", m.Payload())
	}
}

// Without deduplication, the same sequence id is stored twice.
func TestNoDeduplicationByDefault(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, Name: "plain", DisableBatching: true})
	s := int64(7)
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("a"), SequenceID: &s})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("b"), SequenceID: &s})
	if got := len(drain(t, cons)); got != 2 {
		t.Fatalf("without deduplication %d messages stored, want 2", got)
	}
}
