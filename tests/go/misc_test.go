package interop_test

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Pattern consumer: subscribes to the topics matching a regex, including one created after the
// subscription (found by the periodic discovery), and not a topic that does not match.
func TestPatternConsumer(t *testing.T) {
	c := newClient(t)
	prefix := "persistent://public/default/" + uniqueName(t)
	early := newProducer(t, c, pulsar.ProducerOptions{Topic: prefix + "-a", DisableBatching: true})
	send(t, early, &pulsar.ProducerMessage{Payload: []byte("a-0")})
	cons := subscribe(t, c, pulsar.ConsumerOptions{
		TopicsPattern:               regexp.QuoteMeta(prefix) + "-[ab]",
		SubscriptionName:            "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		AutoDiscoveryPeriod:         500 * time.Millisecond,
	})
	m := receive(t, cons)
	if string(m.Payload()) != "a-0" || m.Topic() != prefix+"-a" {
		t.Fatalf("got %q from %s", m.Payload(), m.Topic())
	}
	ack(t, cons, m)
	other := newProducer(t, c, pulsar.ProducerOptions{Topic: prefix + "-c", DisableBatching: true})
	send(t, other, &pulsar.ProducerMessage{Payload: []byte("c-0")})
	late := newProducer(t, c, pulsar.ProducerOptions{Topic: prefix + "-b", DisableBatching: true})
	send(t, late, &pulsar.ProducerMessage{Payload: []byte("b-0")})
	m = receiveWithin(t, cons, 15*time.Second)
	if string(m.Payload()) != "b-0" || m.Topic() != prefix+"-b" {
		t.Fatalf("after discovery got %q from %s, want b-0 from the new topic", m.Payload(), m.Topic())
	}
	ack(t, cons, m)
	expectNothing(t, cons)
}

// TableView: the latest value per key, and updates published after it was created.
func TestTableView(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewStringSchema(nil)})
	for _, kv := range [][2]string{{"k1", "v1"}, {"k2", "v2"}, {"k1", "v3"}} {
		send(t, p, &pulsar.ProducerMessage{Key: kv[0], Value: kv[1]})
	}
	tv, err := c.CreateTableView(pulsar.TableViewOptions{Topic: topic, Schema: pulsar.NewStringSchema(nil),
		SchemaValueType: reflect.TypeFor[*string]()}) // the Go client's StringSchema decodes into *string
	if err != nil {
		t.Fatalf("CreateTableView: %v", err)
	}
	defer tv.Close()
	if tv.Size() != 2 || str(tv.Get("k1")) != "v3" || str(tv.Get("k2")) != "v2" {
		t.Fatalf("table view after creation: %v, want map[k1:v3 k2:v2]", tv.Entries())
	}
	send(t, p, &pulsar.ProducerMessage{Key: "k3", Value: "v4"})
	deadline := time.Now().Add(receiveTimeout)
	for str(tv.Get("k3")) != "v4" {
		if time.Now().After(deadline) {
			t.Fatalf("update k3=v4 not seen by the table view: %v", tv.Entries())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if tv.Size() != 3 {
		t.Fatalf("table view %v, want 3 keys", tv.Entries())
	}
}

func str(v any) string {
	if p, ok := v.(*string); ok && p != nil {
		return *p
	}
	return fmt.Sprintf("<%T %v>", v, v)
}

// Transactions are not offered by pulsar-rs: a client asking for them must fail cleanly and
// quickly at NewClient (the Go client looks up the transaction coordinator topic's partitions
// and reports ErrTransactionCoordinatorNotEnabled when there are none), not hang.
func TestTransactionsRefused(t *testing.T) {
	opts := clientOptions(t)
	opts.EnableTransaction = true
	type result struct {
		c   pulsar.Client
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		c, err := pulsar.NewClient(opts)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err == nil {
			r.c.Close()
			t.Fatal("NewClient with EnableTransaction succeeded against a broker without transactions")
		}
		if !errors.Is(r.err, pulsar.ErrTransactionCoordinatorNotEnabled) {
			t.Fatalf("NewClient with EnableTransaction: %v, want %v", r.err, pulsar.ErrTransactionCoordinatorNotEnabled)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("refusal took %v", el)
		}
	case <-time.After(opTimeout + 5*time.Second):
		t.Fatal("NewClient with EnableTransaction hangs")
	}
	// A client without transactions is unaffected.
	c := newClient(t)
	topic := uniqueTopic(t)
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint("ok"))})
}
