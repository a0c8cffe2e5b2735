package interop_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Nack: the message comes back after NackRedeliveryDelay with its redelivery count raised each
// time; an acked neighbour does not come back.
func TestNackRedeliveryCount(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		NackRedeliveryDelay: 200 * time.Millisecond})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendN(t, p, "m", 2)
	first := map[string]pulsar.Message{}
	for range 2 {
		m := receive(t, cons)
		first[string(m.Payload())] = m
	}
	if len(first) != 2 {
		t.Fatalf("first delivery: %v", keysOf(first))
	}
	ack(t, cons, first["m-1"])
	m := first["m-0"]
	for round := 1; round <= 3; round++ {
		cons.Nack(m)
		m = receive(t, cons)
		if string(m.Payload()) != "m-0" {
			t.Fatalf("round %d: got %q, want the nacked m-0 (m-1 was acked)", round, m.Payload())
		}
		if got := m.RedeliveryCount(); got != uint32(round) {
			t.Fatalf("round %d: redelivery count %d, want %d", round, got, round)
		}
	}
	ack(t, cons, m)
	expectNothing(t, cons)
}

func keysOf(m map[string]pulsar.Message) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Nack is not immediate: the message is held back for NackRedeliveryDelay.
func TestNackDelay(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		NackRedeliveryDelay: 1500 * time.Millisecond})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("x")})
	m := receive(t, cons)
	start := time.Now()
	cons.Nack(m)
	m2 := receive(t, cons)
	if el := time.Since(start); el < time.Second {
		t.Fatalf("nacked message came back after %v, before the 1.5 s delay", el)
	}
	if string(m2.Payload()) != "x" || m2.RedeliveryCount() != 1 {
		t.Fatalf("redelivered %q with count %d", m2.Payload(), m2.RedeliveryCount())
	}
	ack(t, cons, m2)
}

// The Go client has no ack timeout (ConsumerOptions has no AckTimeout in v0.19.0): what the
// broker does for it is redeliver what a consumer received and did not ack. Here the consumer
// holding unacked messages leaves; the other Shared consumer gets exactly those, and the acked
// ones never again.
func TestUnackedRedeliveredToOtherConsumer(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	opts := pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, ReceiverQueueSize: 4}
	a, err := c.Subscribe(opts)
	if err != nil {
		t.Fatal(err)
	}
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendN(t, p, "m", 4)
	for i := range 4 {
		m := receive(t, a)
		if i%2 == 0 {
			ack(t, a, m)
		}
	}
	b := subscribe(t, c, opts)
	// b gets nothing while a holds the messages.
	expectNothing(t, b)
	a.Close()
	got := map[string]uint32{}
	for _, m := range drainQuiet(b) {
		got[string(m.Payload())] = m.RedeliveryCount()
	}
	if len(got) != 2 {
		t.Fatalf("after the first consumer left, the second got %v, want m-1 and m-3", got)
	}
	if _, ok := got["m-1"]; !ok {
		t.Fatalf("m-1 not redelivered: %v", got)
	}
	if _, ok := got["m-3"]; !ok {
		t.Fatalf("m-3 not redelivered: %v", got)
	}
}

// Dead letter policy: after MaxDeliveries nacks the message goes to the dead letter topic (with
// its payload and properties) and stops coming back.
func TestDeadLetterPolicy(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	dlq := topic + "-my-dlq"
	dlqCons := subscribe(t, c, pulsar.ConsumerOptions{Topic: dlq, SubscriptionName: "dlq-reader",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		NackRedeliveryDelay: 100 * time.Millisecond,
		DLQ:                 &pulsar.DLQPolicy{MaxDeliveries: 3, DeadLetterTopic: dlq}})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("poison"), Properties: map[string]string{"p": "1"}})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("good")})
	deliveries := 0
	for {
		m := tryReceive(cons, 3*time.Second)
		if m == nil {
			break
		}
		if string(m.Payload()) == "good" {
			ack(t, cons, m)
			continue
		}
		deliveries++
		if deliveries > 5 {
			t.Fatalf("poison message delivered %d times, MaxDeliveries is 3", deliveries)
		}
		cons.Nack(m)
	}
	if deliveries != 3 {
		t.Fatalf("poison message delivered %d times, want 3 (MaxDeliveries)", deliveries)
	}
	d := receive(t, dlqCons)
	if string(d.Payload()) != "poison" || d.Properties()["p"] != "1" {
		t.Fatalf("dead letter: %q %v", d.Payload(), d.Properties())
	}
	if d.Properties()["REAL_TOPIC"] == "" || d.Properties()["ORIGIN_MESSAGE_ID"] == "" {
		t.Fatalf("dead letter lacks REAL_TOPIC / ORIGIN_MESSAGE_ID: %v", d.Properties())
	}
	ack(t, dlqCons, d)
	expectNothing(t, dlqCons)
}

// Retry letter topic: ReconsumeLater sends the message to the retry topic, from which the same
// consumer gets it again after the delay with RECONSUMETIMES counting; past MaxDeliveries it
// goes to the dead letter topic.
func TestRetryLetterTopic(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	retry, dlq := topic+"-retry", topic+"-dlq"
	dlqCons := subscribe(t, c, pulsar.ConsumerOptions{Topic: dlq, SubscriptionName: "dlq-reader",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		RetryEnable: true,
		DLQ:         &pulsar.DLQPolicy{MaxDeliveries: 2, RetryLetterTopic: retry, DeadLetterTopic: dlq}})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("again"), Properties: map[string]string{"k": "v"}})
	m := receive(t, cons)
	if string(m.Payload()) != "again" {
		t.Fatalf("got %q", m.Payload())
	}
	// The retry topic's message carries DeliverAfter; Pulsar may deliver it up to one tick
	// (delayedDeliveryTickTimeMillis, 1 s) early, so the delay is 1.6 s and the check 0.5 s.
	for i := 1; i <= 2; i++ {
		start := time.Now()
		cons.ReconsumeLater(m, 1600*time.Millisecond)
		m = receive(t, cons)
		if el := time.Since(start); el < 500*time.Millisecond {
			t.Fatalf("retry %d came back after %v, before its 1.6 s delay (less one 1 s tick)", i, el)
		}
		if string(m.Payload()) != "again" || m.Properties()["k"] != "v" {
			t.Fatalf("retry %d: %q %v", i, m.Payload(), m.Properties())
		}
		if got := m.Properties()["RECONSUMETIMES"]; got != fmt.Sprint(i) {
			t.Fatalf("retry %d: RECONSUMETIMES %q", i, got)
		}
		if m.Properties()["REAL_TOPIC"] != topic {
			t.Fatalf("retry %d: REAL_TOPIC %q, want %q", i, m.Properties()["REAL_TOPIC"], topic)
		}
	}
	cons.ReconsumeLater(m, 100*time.Millisecond)
	d := receive(t, dlqCons)
	if string(d.Payload()) != "again" {
		t.Fatalf("dead letter after retries: %q", d.Payload())
	}
	expectNothing(t, cons)
}
