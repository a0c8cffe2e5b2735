package interop_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Each compression codec of the Go client round-trips batched and unbatched messages.
func TestCompression(t *testing.T) {
	payload := bytes.Repeat([]byte("pulsar-rs compresses this line well. "), 300)
	for _, tc := range []struct {
		name string
		typ  pulsar.CompressionType
	}{{"none", pulsar.NoCompression}, {"lz4", pulsar.LZ4}, {"zlib", pulsar.ZLib}, {"zstd", pulsar.ZSTD}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t)
			topic := uniqueTopic(t)
			cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
			for _, batching := range []bool{false, true} {
				p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, CompressionType: tc.typ,
					DisableBatching: !batching, BatchingMaxPublishDelay: 20 * time.Millisecond})
				for i := range 3 {
					p.SendAsync(t.Context(), &pulsar.ProducerMessage{Payload: append(fmt.Appendf(nil, "%d:", i), payload...)},
						func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
							if err != nil {
								t.Errorf("SendAsync: %v", err)
							}
						})
				}
				if err := p.Flush(); err != nil {
					t.Fatalf("Flush: %v", err)
				}
				for i := range 3 {
					m := receive(t, cons)
					if want := append(fmt.Appendf(nil, "%d:", i), payload...); !bytes.Equal(m.Payload(), want) {
						t.Fatalf("batching=%v message %d: %d bytes, payload differs (want %d bytes)",
							batching, i, len(m.Payload()), len(want))
					}
					ack(t, cons, m)
				}
			}
		})
	}
}

// Chunking: a message larger than the chunk size is split by the producer and reassembled for
// the consumer; small messages around it are unaffected.
func TestChunking(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true, EnableChunking: true,
		ChunkMaxMessageSize: 1000})
	big := make([]byte, 10_500)
	for i := range big {
		big[i] = byte(i * 7)
	}
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("small-1")})
	bigID := send(t, p, &pulsar.ProducerMessage{Payload: big, Key: "big", Properties: map[string]string{"a": "b"}})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("small-2")})
	expectPayload(t, receive(t, cons), "small-1")
	m := receive(t, cons)
	if !bytes.Equal(m.Payload(), big) {
		t.Fatalf("chunked message: %d bytes received, want %d identical bytes", len(m.Payload()), len(big))
	}
	if m.Key() != "big" || m.Properties()["a"] != "b" {
		t.Fatalf("chunked message key %q properties %v", m.Key(), m.Properties())
	}
	if m.ID().EntryID() <= 1 || bigID.EntryID() != m.ID().EntryID() {
		t.Fatalf("chunked message id %v (producer got %v): expected the last of >= 11 chunk entries", m.ID(), bigID)
	}
	ack(t, cons, m)
	expectPayload(t, receive(t, cons), "small-2")
	// 1 + at least 11 chunks (10500 bytes at most 1000 a chunk) + 1 entries on the topic.
	last, err := cons.GetLastMessageIDs()
	if err != nil {
		t.Fatal(err)
	}
	if last[0].EntryID() < 12 || last[0].EntryID() != bigID.EntryID()+1 {
		t.Fatalf("last entry id %d (big message's %d): want >= 12, right after the last chunk",
			last[0].EntryID(), bigID.EntryID())
	}
}

type order struct {
	ID    int     `json:"id" avro:"id"`
	Item  string  `json:"item" avro:"item"`
	Price float64 `json:"price" avro:"price"`
}

const orderAvro = `{"type":"record","name":"Order","namespace":"test","fields":[
{"name":"id","type":"int"},{"name":"item","type":"string"},{"name":"price","type":"double"}]}`

// JSON and Avro schemas: values round-trip, the broker stores the schema (admin API shows it),
// and an incompatible schema is refused under the default strategy.
func TestSchemas(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema func() pulsar.Schema
		typ    string
	}{
		{"json", func() pulsar.Schema { return pulsar.NewJSONSchema(orderAvro, nil) }, "JSON"},
		{"avro", func() pulsar.Schema { return pulsar.NewAvroSchema(orderAvro, nil) }, "AVRO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t)
			topic := uniqueTopic(t)
			cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Schema: tc.schema()})
			// Batching on: the Go client sets the schema version only on batched messages.
			p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, Schema: tc.schema(),
				BatchingMaxPublishDelay: 10 * time.Millisecond})
			want := order{ID: 42, Item: "widget", Price: 9.5}
			send(t, p, &pulsar.ProducerMessage{Value: &want})
			m := receive(t, cons)
			var got order
			if err := m.GetSchemaValue(&got); err != nil {
				t.Fatalf("GetSchemaValue: %v", err)
			}
			if got != want {
				t.Fatalf("decoded %+v, want %+v", got, want)
			}
			if len(m.SchemaVersion()) == 0 {
				t.Fatal("message carries no schema version")
			}
			ack(t, cons, m)

			info := getJSON(t, adminURL(t)+"/admin/v2/schemas/public/default/"+topicLocalName(topic)+"/schema")
			if info["type"] != tc.typ || !strings.Contains(fmt.Sprint(info["data"]), `"item"`) {
				t.Fatalf("stored schema: %v", info)
			}

			incompatible := `{"type":"record","name":"Order","namespace":"test","fields":[
{"name":"id","type":"string"},{"name":"count","type":"long"}]}`
			var bad pulsar.Schema = pulsar.NewAvroSchema(incompatible, nil)
			if tc.typ == "JSON" {
				bad = pulsar.NewJSONSchema(incompatible, nil)
			}
			if p2, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: bad}); err == nil {
				p2.Close()
				t.Fatal("a producer with an incompatible schema was accepted")
			} else if !strings.Contains(strings.ToLower(err.Error()), "incompatible") {
				t.Fatalf("incompatible schema refused with %v, want an IncompatibleSchema error", err)
			}
		})
	}
}

func topicLocalName(topic string) string { return topic[strings.LastIndex(topic, "/")+1:] }

// Delayed delivery: DeliverAfter and DeliverAt hold a message back on a Shared subscription while
// later messages are delivered. As in Pulsar (delayedDeliveryTickTimeMillis 1 s,
// isDelayedDeliveryDeliverAtTimeStrict false), a message may come up to one tick early.
func TestDelayedDelivery(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	start := time.Now()
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("at-3.5s"), DeliverAt: start.Add(3500 * time.Millisecond)})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("after-2s"), DeliverAfter: 2 * time.Second})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("now")})
	for _, tc := range []struct {
		payload string
		min     time.Duration
	}{{"now", 0}, {"after-2s", 900 * time.Millisecond}, {"at-3.5s", 2400 * time.Millisecond}} {
		m := receive(t, cons)
		el := time.Since(start)
		if string(m.Payload()) != tc.payload {
			t.Fatalf("at %v got %q, want %q", el, m.Payload(), tc.payload)
		}
		if el < tc.min {
			t.Fatalf("%q delivered after %v, before its delay %v", tc.payload, el, tc.min)
		}
		ack(t, cons, m)
	}
}

// Producer access modes: an Exclusive producer fences out others (Exclusive and Shared); a
// WaitForExclusive producer waits and takes over when the Exclusive one closes.
func TestProducerAccessModes(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	excl, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "first",
		ProducerAccessMode: pulsar.ProducerAccessModeExclusive})
	if err != nil {
		t.Fatalf("Exclusive producer: %v", err)
	}
	// As Pulsar's AbstractTopic.incrementTopicEpochIfNeeded: Exclusive -> ProducerFenced,
	// Shared -> ProducerBusy.
	for _, tc := range []struct {
		mode pulsar.ProducerAccessMode
		want string
	}{{pulsar.ProducerAccessModeExclusive, "ProducerFenced"}, {pulsar.ProducerAccessModeShared, "ProducerBusy"}} {
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: tc.mode})
		if err == nil {
			p.Close()
			t.Fatalf("producer (mode %d) accepted while an Exclusive producer is connected", tc.mode)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "first") {
			t.Fatalf("mode %d refused with %v, want %s naming the producer first", tc.mode, err, tc.want)
		}
	}
	type result struct {
		p   pulsar.Producer
		err error
	}
	waited := make(chan result, 1)
	go func() {
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "waiter",
			ProducerAccessMode: pulsar.ProducerAccessModeWaitForExclusive})
		waited <- result{p, err}
	}()
	select {
	case r := <-waited:
		if r.p != nil {
			r.p.Close()
		}
		t.Fatalf("WaitForExclusive returned (%v) while the Exclusive producer is connected", r.err)
	case <-time.After(quietWait):
	}
	send(t, excl, &pulsar.ProducerMessage{Payload: []byte("from-first")})
	excl.Close()
	select {
	case r := <-waited:
		if r.err != nil {
			t.Fatalf("WaitForExclusive after the Exclusive producer closed: %v", r.err)
		}
		defer r.p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if _, err := r.p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("from-waiter")}); err != nil {
			t.Fatalf("send by the producer that waited: %v", err)
		}
	case <-time.After(opTimeout):
		t.Fatal("WaitForExclusive producer not granted access after the Exclusive one closed")
	}
}
