// Test helper: Apache Pulsar's own classes read what the Rust managed ledger wrote. The ledger list
// and cursor records are parsed with Pulsar's MLDataFormats (protobuf-java), and every ledger the
// list names is read with BookKeeper's own Java client. Compiled by the tests with
// `javac -cp '<pulsar>/lib/*'`.
import java.nio.charset.StandardCharsets;
import java.util.Enumeration;
import java.util.concurrent.CountDownLatch;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.LedgerEntry;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.mledger.proto.MLDataFormats;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

public class MlTool {
    static ZooKeeper zk(String servers) throws Exception {
        CountDownLatch up = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(servers, 10000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                up.countDown();
            }
        });
        up.await();
        return zk;
    }

    public static void main(String[] args) throws Exception {
        String servers = args[1];
        String path = "/managed-ledgers/" + args[2];
        try (ZooKeeper zk = zk(servers)) {
            switch (args[0]) {
                case "ml": {
                    // ml <zk> <name>: the ledger list, then every entry of every ledger
                    MLDataFormats.ManagedLedgerInfo info =
                            MLDataFormats.ManagedLedgerInfo.parseFrom(zk.getData(path, false, null));
                    ClientConfiguration conf = new ClientConfiguration();
                    conf.setMetadataServiceUri("zk+hierarchical://" + servers + "/ledgers");
                    conf.setUseV2WireProtocol(true);
                    try (BookKeeper bk = new BookKeeper(conf)) {
                        for (MLDataFormats.ManagedLedgerInfo.LedgerInfo li : info.getLedgerInfoList()) {
                            System.out.println("LEDGER " + li.getLedgerId() + " " + li.getEntries() + " "
                                    + li.getSize());
                            LedgerHandle lh = bk.openLedgerNoRecovery(li.getLedgerId(),
                                    BookKeeper.DigestType.CRC32C, "".getBytes(StandardCharsets.UTF_8));
                            long last = lh.isClosed() ? lh.getLastAddConfirmed() : lh.readLastConfirmed();
                            if (last >= 0) {
                                Enumeration<LedgerEntry> es = lh.readEntries(0, last);
                                while (es.hasMoreElements()) {
                                    LedgerEntry e = es.nextElement();
                                    System.out.println("ENTRY " + li.getLedgerId() + ":" + e.getEntryId() + " "
                                            + new String(e.getEntry(), StandardCharsets.UTF_8));
                                }
                            }
                            lh.close();
                        }
                    }
                    break;
                }
                case "cursor": {
                    // cursor <zk> <name> <cursor>: mark-delete and individually deleted ranges
                    MLDataFormats.ManagedCursorInfo c = MLDataFormats.ManagedCursorInfo.parseFrom(
                            zk.getData(path + "/" + args[3], false, null));
                    System.out.println("CURSORLEDGER " + c.getCursorsLedgerId());
                    System.out.println("MARKDELETE " + c.getMarkDeleteLedgerId() + ":" + c.getMarkDeleteEntryId());
                    for (MLDataFormats.MessageRange r : c.getIndividualDeletedMessagesList()) {
                        System.out.println("RANGE " + r.getLowerEndpoint().getLedgerId() + ":"
                                + r.getLowerEndpoint().getEntryId() + " " + r.getUpperEndpoint().getLedgerId()
                                + ":" + r.getUpperEndpoint().getEntryId());
                    }
                    break;
                }
                case "pulsarcursor": {
                    // pulsarcursor <zk> <name> <cursor> <mdLedger> <mdEntry> <ackLedger> <ackEntry>: a cursor
                    // as a Pulsar broker that died leaves it: its position in a cursor ledger (a PositionInfo
                    // entry, the ledger never closed) and the record naming that ledger.
                    ClientConfiguration conf = new ClientConfiguration();
                    conf.setMetadataServiceUri("zk+hierarchical://" + servers + "/ledgers");
                    conf.setUseV2WireProtocol(true);
                    long ack = Long.parseLong(args[7]);
                    MLDataFormats.NestedPositionInfo lo = MLDataFormats.NestedPositionInfo.newBuilder()
                            .setLedgerId(Long.parseLong(args[6])).setEntryId(ack - 1).build();
                    MLDataFormats.NestedPositionInfo hi = MLDataFormats.NestedPositionInfo.newBuilder()
                            .setLedgerId(Long.parseLong(args[6])).setEntryId(ack).build();
                    MLDataFormats.PositionInfo pi = MLDataFormats.PositionInfo.newBuilder()
                            .setLedgerId(Long.parseLong(args[4])).setEntryId(Long.parseLong(args[5]))
                            .addIndividualDeletedMessages(MLDataFormats.MessageRange.newBuilder()
                                    .setLowerEndpoint(lo).setUpperEndpoint(hi))
                            .build();
                    BookKeeper bk = new BookKeeper(conf);
                    LedgerHandle lh = bk.createLedger(2, 2, 2, BookKeeper.DigestType.CRC32C,
                            "".getBytes(StandardCharsets.UTF_8));
                    lh.addEntry(pi.toByteArray());
                    MLDataFormats.ManagedCursorInfo info = MLDataFormats.ManagedCursorInfo.newBuilder()
                            .setCursorsLedgerId(lh.getId()).build();
                    zk.create(path + "/" + args[3], info.toByteArray(),
                            org.apache.zookeeper.ZooDefs.Ids.OPEN_ACL_UNSAFE, org.apache.zookeeper.CreateMode.PERSISTENT);
                    System.out.println("CURSORLEDGER " + lh.getId());
                    // Exit without closing the ledger, as a broker killed mid-way would.
                    System.out.flush();
                    Runtime.getRuntime().halt(0);
                    break;
                }
                default:
                    throw new IllegalArgumentException(args[0]);
            }
        }
    }
}
