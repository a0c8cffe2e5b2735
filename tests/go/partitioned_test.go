package interop_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// createPartitioned creates a partitioned topic with a plain PUT of the partition count, as
// pulsar-admin does (pulsaradmin's Topics().Create sends Pulsar's newer PartitionedTopicMetadata
// body, which pulsar-rs refuses: TestAdminCreatePartitionedWithMetadataBody).
func createPartitioned(t *testing.T, topic string, n int) {
	t.Helper()
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		t.Fatal(err)
	}
	url := adminURL(t) + "/admin/v2/" + tn.GetRestPath() + "/partitions"
	if status, body := httpDo(t, http.MethodPut, url, "application/json", strconv.Itoa(n)); status != http.StatusNoContent {
		t.Fatalf("create partitioned topic %s: %d %s", topic, status, body)
	}
}

func partitionOf(t *testing.T, base string, m pulsar.Message) int {
	t.Helper()
	suffix, ok := strings.CutPrefix(m.Topic(), base+"-partition-")
	if !ok {
		t.Fatalf("message topic %q is not a partition of %q", m.Topic(), base)
	}
	i, err := strconv.Atoi(suffix)
	if err != nil {
		t.Fatalf("partition suffix of %q: %v", m.Topic(), err)
	}
	return i
}

// A custom MessageRouter decides the partition; the consumer of the partitioned topic sees each
// message on that partition, and the message id's partition index agrees.
func TestPartitionedCustomRouter(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	createPartitioned(t, topic, 3)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true,
		MessageRouter: func(m *pulsar.ProducerMessage, md pulsar.TopicMetadata) int {
			if md.NumPartitions() != 3 {
				panic(fmt.Sprintf("router sees %d partitions", md.NumPartitions()))
			}
			i, _ := strconv.Atoi(m.Properties["target"])
			return i
		}})
	const n = 12
	for i := range n {
		id := send(t, p, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "%d", i),
			Properties: map[string]string{"target": fmt.Sprint(i % 3)}})
		if id.PartitionIdx() != int32(i%3) {
			t.Fatalf("send %d: id partition %d, want %d", i, id.PartitionIdx(), i%3)
		}
	}
	for range n {
		m := receive(t, cons)
		want, _ := strconv.Atoi(m.Properties()["target"])
		if got := partitionOf(t, topic, m); got != want {
			t.Fatalf("message %q on partition %d, routed to %d", m.Payload(), got, want)
		}
		if m.ID().PartitionIdx() != int32(want) {
			t.Fatalf("message %q: id partition %d, want %d", m.Payload(), m.ID().PartitionIdx(), want)
		}
		ack(t, cons, m)
	}
	expectNothing(t, cons)

	// One id per partition, each the last message sent there.
	last, err := cons.GetLastMessageIDs()
	if err != nil {
		t.Fatalf("GetLastMessageIDs: %v", err)
	}
	if len(last) != 3 {
		t.Fatalf("GetLastMessageIDs on 3 partitions: %d ids", len(last))
	}
	for _, id := range last {
		if !strings.HasPrefix(id.Topic(), topic+"-partition-") || id.EntryID() != n/3-1 {
			t.Fatalf("last id %v of %s: want entry %d on a partition", id, id.Topic(), n/3-1)
		}
	}
}

// The default router sends every message of a key to one partition, and keyless unbatched
// messages round-robin over all partitions.
func TestPartitionedDefaultRouting(t *testing.T) {
	c := newClient(t)
	topic := uniqueTopic(t)
	createPartitioned(t, topic, 4)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	p := newProducer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	for i := range 40 {
		key := ""
		if i < 24 {
			key = fmt.Sprintf("key-%d", i%6)
		}
		send(t, p, &pulsar.ProducerMessage{Key: key, Payload: fmt.Appendf(nil, "%d", i)})
	}
	keyPart := map[string]int{}
	keyless := map[int]int{}
	for range 40 {
		m := receive(t, cons)
		part := partitionOf(t, topic, m)
		if m.Key() == "" {
			keyless[part]++
		} else if prev, ok := keyPart[m.Key()]; ok && prev != part {
			t.Fatalf("key %s on partitions %d and %d", m.Key(), prev, part)
		} else {
			keyPart[m.Key()] = part
		}
		ack(t, cons, m)
	}
	if len(keyless) != 4 {
		t.Fatalf("16 keyless messages reached partitions %v, want all 4", keyless)
	}
	// Partitions can also be consumed one by one.
	part := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic + "-partition-1", SubscriptionName: "single",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if got := len(drain(t, part)); got != keyless[1]+countIn(keyPart, 1) {
		t.Fatalf("partition 1 alone has %d messages, want %d", got, keyless[1]+countIn(keyPart, 1))
	}
}

// countIn: messages on partition p sent with keys (each key was sent 4 times).
func countIn(keyPart map[string]int, p int) int {
	n := 0
	for _, part := range keyPart {
		if part == p {
			n += 4
		}
	}
	return n
}
