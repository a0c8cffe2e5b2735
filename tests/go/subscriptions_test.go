package interop_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/spaolacci/murmur3"
)

// drain receives until nothing arrives for quietWait, acking everything.
func drain(t *testing.T, c pulsar.Consumer) []pulsar.Message {
	t.Helper()
	var out []pulsar.Message
	for {
		m := tryReceive(c, quietWait)
		if m == nil {
			return out
		}
		ack(t, c, m)
		out = append(out, m)
	}
}

// Exclusive: a second consumer on the subscription is refused with ConsumerBusy; the first gets everything.
func TestExclusiveSubscription(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	first := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Exclusive})
	second, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Exclusive})
	if err == nil {
		second.Close()
		t.Fatal("a second Exclusive consumer on the same subscription was accepted")
	}
	if !strings.Contains(err.Error(), "ConsumerBusy") {
		t.Fatalf("second Exclusive consumer: %v, want a ConsumerBusy error", err)
	}
	// A Shared consumer on an Exclusive subscription is refused too (type mismatch).
	if other, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared}); err == nil {
		other.Close()
		t.Fatal("a Shared consumer joined an Exclusive subscription")
	}
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendN(t, p, "m", 5)
	if got := len(drain(t, first)); got != 5 {
		t.Fatalf("exclusive consumer received %d messages, want 5", got)
	}
}

// Shared: two consumers split the messages, each message goes to exactly one of them.
func TestSharedSubscription(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	opts := pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, ReceiverQueueSize: 10}
	a := subscribe(t, c, opts)
	b := subscribe(t, c, opts)
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	const n = 100
	sendN(t, p, "m", n)
	seen := map[string]int{}
	gotA, gotB := 0, 0
	ra, rb := make(chan []pulsar.Message), make(chan []pulsar.Message)
	go func() { ra <- drainQuiet(a) }()
	go func() { rb <- drainQuiet(b) }()
	for _, m := range <-ra {
		seen[string(m.Payload())]++
		gotA++
	}
	for _, m := range <-rb {
		seen[string(m.Payload())]++
		gotB++
	}
	if gotA+gotB != n || len(seen) != n {
		t.Fatalf("shared: a got %d, b got %d, %d distinct; want %d distinct, no duplicates", gotA, gotB, len(seen), n)
	}
	if gotA == 0 || gotB == 0 {
		t.Fatalf("shared: one consumer got nothing (a %d, b %d)", gotA, gotB)
	}
}

// drainQuiet is drain without *testing.T (for goroutines): acks and returns what arrives.
func drainQuiet(c pulsar.Consumer) []pulsar.Message {
	var out []pulsar.Message
	for {
		m := tryReceive(c, 2*quietWait)
		if m == nil {
			return out
		}
		_ = c.Ack(m)
		out = append(out, m)
	}
}

// Failover: one consumer is active and receives everything; when it leaves, the standby takes
// over the unacknowledged rest.
func TestFailoverSubscription(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	mk := func(name string) pulsar.Consumer {
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Failover,
			Name: name, ReceiverQueueSize: 5})
		if err != nil {
			t.Fatalf("Subscribe %s: %v", name, err)
		}
		return cons
	}
	a, b := mk("a"), mk("b")
	defer a.Close()
	defer b.Close()
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendN(t, p, "m", 10)
	// Exactly one of them receives the first messages.
	ma, mb := tryReceive(a, receiveTimeout/2), tryReceive(b, quietWait)
	var active, standby pulsar.Consumer
	var first pulsar.Message
	switch {
	case ma != nil && mb == nil:
		active, standby, first = a, b, ma
	case mb != nil && ma == nil:
		active, standby, first = b, a, mb
	case ma == nil && mb == nil:
		// a may have been idle only because b is active: check b again.
		if mb = tryReceive(b, receiveTimeout); mb == nil {
			t.Fatal("failover: neither consumer received a message")
		}
		active, standby, first = b, a, mb
	default:
		t.Fatalf("failover: both consumers received messages (%q and %q)", ma.Payload(), mb.Payload())
	}
	if string(first.Payload()) != "m-0" {
		t.Fatalf("active consumer's first message %q, want m-0", first.Payload())
	}
	ack(t, active, first)
	for i := 1; i < 4; i++ {
		m := receive(t, active)
		if want := fmt.Sprintf("m-%d", i); string(m.Payload()) != want {
			t.Fatalf("active got %q, want %q", m.Payload(), want)
		}
		ack(t, active, m)
	}
	if m := tryReceive(standby, quietWait); m != nil {
		t.Fatalf("standby consumer received %q while the active one is connected", m.Payload())
	}
	active.Close()
	// The standby gets m-4..m-9 (m-0..m-3 were acked), in order.
	for i := 4; i < 10; i++ {
		m := receive(t, standby)
		if want := fmt.Sprintf("m-%d", i); string(m.Payload()) != want {
			t.Fatalf("after failover got %q, want %q", m.Payload(), want)
		}
		ack(t, standby, m)
	}
}

// Key_Shared: every key goes to exactly one consumer, and with many keys both consumers get some;
// per key, order is kept.
func TestKeySharedSubscription(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	opts := pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared}
	a := subscribe(t, c, opts)
	b := subscribe(t, c, opts)
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	const keys, perKey = 20, 5
	for i := range perKey {
		for k := range keys {
			send(t, p, &pulsar.ProducerMessage{Key: fmt.Sprintf("key-%d", k), Payload: fmt.Appendf(nil, "%d", i)})
		}
	}
	ra, rb := make(chan []pulsar.Message), make(chan []pulsar.Message)
	go func() { ra <- drainQuiet(a) }()
	go func() { rb <- drainQuiet(b) }()
	owner := map[string]string{}
	next := map[string]int{}
	total := 0
	for name, msgs := range map[string][]pulsar.Message{"a": <-ra, "b": <-rb} {
		for _, m := range msgs {
			total++
			if o, ok := owner[m.Key()]; ok && o != name {
				t.Fatalf("key %s delivered to both consumers", m.Key())
			}
			owner[m.Key()] = name
			if want := fmt.Sprint(next[m.Key()]); string(m.Payload()) != want {
				t.Fatalf("key %s: got %q, want %q (order per key)", m.Key(), m.Payload(), want)
			}
			next[m.Key()]++
		}
	}
	if total != keys*perKey {
		t.Fatalf("key_shared: received %d messages, want %d", total, keys*perKey)
	}
	perConsumer := map[string]int{}
	for _, o := range owner {
		perConsumer[o]++
	}
	if perConsumer["a"] == 0 || perConsumer["b"] == 0 {
		t.Fatalf("key_shared: all %d keys went to one consumer: %v", keys, perConsumer)
	}
}

// Key_Shared with sticky ranges: each consumer gets exactly the keys whose hash falls in its range.
func TestKeySharedSticky(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	lo := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared,
		KeySharedPolicy: &pulsar.KeySharedPolicy{Mode: pulsar.KeySharedPolicyModeSticky,
			HashRanges: []int{0, 32767}}})
	hi := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared,
		KeySharedPolicy: &pulsar.KeySharedPolicy{Mode: pulsar.KeySharedPolicyModeSticky,
			HashRanges: []int{32768, 65535}}})
	// An overlapping range is refused.
	if over, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.KeyShared,
		KeySharedPolicy: &pulsar.KeySharedPolicy{Mode: pulsar.KeySharedPolicyModeSticky,
			HashRanges: []int{100, 200}}}); err == nil {
		over.Close()
		t.Fatal("a sticky consumer with an overlapping hash range was accepted")
	}
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	const keys = 30
	for k := range keys {
		send(t, p, &pulsar.ProducerMessage{Key: fmt.Sprintf("key-%d", k), Payload: []byte("x")})
	}
	rl, rh := make(chan []pulsar.Message), make(chan []pulsar.Message)
	go func() { rl <- drainQuiet(lo) }()
	go func() { rh <- drainQuiet(hi) }()
	got := 0
	for name, msgs := range map[string][]pulsar.Message{"lo": <-rl, "hi": <-rh} {
		for _, m := range msgs {
			got++
			h := murmur3.Sum32([]byte(m.Key())) % 65536 // Pulsar: Murmur3_32(key) & MAX_INT, mod 65536
			if (h <= 32767) != (name == "lo") {
				t.Fatalf("key %s (hash slot %d) delivered to %s", m.Key(), h, name)
			}
		}
	}
	if got != keys {
		t.Fatalf("sticky: received %d, want %d", got, keys)
	}
}
