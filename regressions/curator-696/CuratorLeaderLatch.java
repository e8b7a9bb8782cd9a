// locklab adapter (docs/protocol.md, v1) for Apache Curator's LeaderLatch (Debian libcurator-recipes-java 5.4.0) as
// a lock whose holder is the leader: acquire starts a latch on the key and awaits its leadership, release closes it
// (its node deleted), and the latch's notLeader is the lost signal. One client (one session at a time) per process.
// Compiled beside approaches/CuratorMutex.java by approaches/curator-mutex.sh, whose protocol helpers it calls.
//
// Option close_on_lost (the control): the application does on LOST what the 5.4.0 docs say the latch does itself
// (leader-latch.confluence, "Error Handling": delete its previous node and create a new one): every latch is
// closed, a waiting acquire starts a new one. Without it, the library's own handling alone (the affected case).
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.*;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.state.ConnectionState;

public class CuratorLeaderLatch {
    // One acquire's latch; a waiting one is replaced by the control on LOST.
    static final class Attempt {
        final String path;
        volatile LeaderLatch latch;
        Attempt(String path) { this.path = path; }
        volatile boolean granted, lost;
    }
    static final Map<Long, Attempt> attempts = new ConcurrentHashMap<>();  // acquire id -> its attempt
    static CuratorMutex.Heartbeats beats;  // the session's heartbeats, as CuratorMutex sends them

    static LeaderLatch start(CuratorFramework client, long id, Attempt a) throws Exception {
        LeaderLatch l = new LeaderLatch(client, a.path, "locklab-" + id);
        l.addListener(new LeaderLatchListener() {
            public void isLeader() {  // which session owns the node: the evidence, read apart from the decision
                String node = l.getOurPath();
                long session = sessionId(client);
                System.err.println("lease " + id + " leads on " + node + " (session 0x" + Long.toHexString(session) + ")");
                try {
                    client.checkExists().inBackground((c, e) -> {
                        if (e.getStat() == null)
                            System.err.println("lease " + id + ": " + node + " is gone");
                        else if (e.getStat().getEphemeralOwner() != session)
                            System.err.println("lease " + id + ": " + node + " is owned by session 0x"
                                + Long.toHexString(e.getStat().getEphemeralOwner()) + ", not ours");
                    }).forPath(node);
                } catch (Exception e) {
                    System.err.println("exists " + node + ": " + e);
                }
            }
            public void notLeader() {
                if (a.granted && !a.lost) {
                    a.lost = true;
                    beats.lost(id);
                    CuratorMutex.send("{\"type\":\"lost\",\"lease\":" + id + ",\"reason\":\"leader latch: not leader\"}");
                }
            }
        });
        a.latch = l;
        l.start();
        return l;
    }

    static long sessionId(CuratorFramework client) {
        try {
            return client.getZookeeperClient().getZooKeeper().getSessionId();
        } catch (Exception e) {
            return 0;
        }
    }

    static void close(LeaderLatch l) {
        try {
            l.close();  // deletes the node (guaranteed, in the background)
        } catch (IOException | IllegalStateException e) {
            System.err.println("close: " + e);  // closed already
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String hello = in.readLine();
        String root = Objects.requireNonNullElse(CuratorMutex.field(hello, "root"), "/locklab/curator-latch");
        boolean closeOnLost = "true".equals(CuratorMutex.field(hello, "close_on_lost"));
        CuratorFramework client = CuratorMutex.client(hello);
        beats = CuratorMutex.Heartbeats.start(client, hello);
        client.getConnectionStateListenable().addListener((c, state) -> {
            System.err.println("connection " + state + " (session 0x" + Long.toHexString(sessionId(client)) + ")");
            if (state != ConnectionState.LOST || !closeOnLost) return;
            attempts.forEach((id, a) -> {
                LeaderLatch old = a.latch;
                try {
                    if (!a.granted) start(client, id, a);
                } catch (Exception e) {
                    System.err.println("restart: " + e);
                }
                close(old);
            });
        });
        client.start();
        client.blockUntilConnected(10, TimeUnit.SECONDS);  // ready either way: calls wait for the connection
        CuratorMutex.send("{\"type\":\"ready\",\"protocol\":1}");
        ExecutorService worker = Executors.newSingleThreadExecutor();
        for (String line; (line = in.readLine()) != null; ) {
            String op = CuratorMutex.field(line, "op"), key = CuratorMutex.field(line, "key");
            long id = Long.parseLong(CuratorMutex.field(line, "id"));
            String lease = CuratorMutex.field(line, "lease");
            if ("close".equals(op)) Runtime.getRuntime().halt(0);  // no client.close(): that would delete our nodes
            long timeout = Long.parseLong(Objects.requireNonNullElse(CuratorMutex.field(line, "timeout_ms"), "5000"));
            boolean wait = "true".equals(CuratorMutex.field(line, "wait"));
            Callable<String> call = () -> {
                if ("acquire".equals(op)) {
                    Attempt a = new Attempt(root + "/" + key);
                    attempts.put(id, a);
                    LeaderLatch l = start(client, id, a);
                    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(wait ? Math.max(timeout - 300, 0) : 0);
                    // The control's LOST handler replaces a waiting latch: wait on the new one.
                    while (!l.await(Math.max(deadline - System.nanoTime(), 0), TimeUnit.NANOSECONDS)) {
                        if (a.latch != l && System.nanoTime() < deadline) { l = a.latch; continue; }
                        attempts.remove(id);
                        close(a.latch);
                        // led for a moment before the close: it may have been granted
                        if (a.latch.getLastPathIsLeader() != null) return "\"info\",\"reason\":\"led before giving up\"";
                        return "\"fail\",\"error\":\"not-acquired\",\"reason\":\"another latch leads\"";
                    }
                    a.granted = true;
                    return "\"ok\"";
                }
                if ("release".equals(op)) {
                    Attempt a = lease == null ? null : attempts.remove(Long.parseLong(lease));
                    if (a == null) return "\"fail\",\"error\":\"not-held\",\"reason\":\"no such lease here\"";
                    beats.drop(Long.parseLong(lease));
                    boolean leads = a.latch.hasLeadership() && !a.lost;
                    close(a.latch);
                    if (!leads) return "\"fail\",\"error\":\"not-held\",\"reason\":\"leadership lost while held\"";
                    return "\"ok\"";
                }
                return "\"fail\",\"error\":\"unsupported\",\"reason\":" + CuratorMutex.q("no " + op + " in LeaderLatch");
            };
            String ans = CuratorMutex.answer(client, worker, op, timeout, call);
            CuratorMutex.send("{\"type\":" + ans + ",\"id\":" + id + "}");
            Attempt held = attempts.get(id);
            if ("acquire".equals(op) && ans.startsWith("\"ok\"") && held != null) beats.hold(id, held.latch.getOurPath());
        }
        Runtime.getRuntime().halt(0);
    }
}
