// locklab adapter (docs/protocol.md, v1) for Apache Curator's InterProcessMutex (Debian libcurator-recipes-java 5.4):
// an ephemeral sequential node under the key, the lowest holds, waiters watch their predecessor (LockInternals
// .internalLockLoop); reentrant per thread (InterProcessMutex.threadData). On session loss the mutex does nothing
// by itself: Curator's docs ask for a ConnectionStateListener (SUSPENDED: maybe lost; LOST: certainly lost).
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*; import java.util.concurrent.*;
import java.util.regex.*;  // no JSON library: Debian's Curator does not bring one
import org.apache.curator.framework.*;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
public class CuratorMutex {
    static final PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    static final Map<String, Mutex> mutexes = new HashMap<>();          // key -> its mutex (reentrancy)
    static final Map<Long, Mutex> leases = new ConcurrentHashMap<>();   // acquire id -> mutex
    static final Map<Long, ConnectionState> lost = new ConcurrentHashMap<>();       // lease -> state it was lost in
    static final Map<Long, String> nodeOf = new ConcurrentHashMap<>();               // acquire id -> its node, for the heartbeats
    static synchronized void send(String json) { out.print(json + "\n"); out.flush(); }
    // The mutex's node path is the holding thread's (getLockPath, protected: for subclasses).
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) { super(client, path); }
        String node() { return getLockPath(); }
    }
    // Session heartbeats (docs/protocol.md, Events): every third of the session timeout, for each lease held and not
    // told lost, `renewing`, an exists of its node, then `renewed` with no valid_ms. Any answer from the server (the
    // node there or not) says the session was alive when the request went out, so locklab's belief in the holder's
    // session follows it, as for the built-in ZooKeeper locks' heartbeats; it is a probe, not a check of the node:
    // a node gone while the library still holds is the lock's failure to report, not the adapter's to hide.
    static final class Heartbeats implements Runnable {
        final CuratorFramework client;
        final long periodMs;
        final Map<Long, String> nodes = new LinkedHashMap<>();  // lease -> its node; guarded by this
        final Set<Long> gone = new HashSet<>();  // leases told lost, never to beat again; guarded by this
        boolean now;  // a lease was added: beat at once; guarded by this
        Heartbeats(CuratorFramework client, long periodMs) { this.client = client; this.periodMs = periodMs; }
        // Start beating for lease: call it once its grant's answer was sent.
        synchronized void hold(long lease, String node) {
            if (node == null || periodMs <= 0 || gone.contains(lease)) return;
            nodes.put(lease, node);
            now = true;
            notifyAll();
        }
        // No renewing is sent for lease once this returns, so a release answered after it follows every one.
        synchronized void drop(long lease) { nodes.remove(lease); gone.remove(lease); }
        // Told lost (maybe before hold): its session is no longer vouched for.
        synchronized void lost(long lease) { nodes.remove(lease); gone.add(lease); }
        public void run() {
            for (;;) {
                List<Long> due;
                synchronized (this) {
                    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(periodMs);
                    for (long left; !now && (left = end - System.nanoTime()) > 0; )
                        try { TimeUnit.NANOSECONDS.timedWait(this, left); } catch (InterruptedException e) { return; }
                    now = false;
                    due = new ArrayList<>(nodes.keySet());
                }
                for (long lease : due) beat(lease);
            }
        }
        void beat(long lease) {
            String node;
            synchronized (this) {
                if ((node = nodes.get(lease)) == null) return;
                send("{\"type\":\"renewing\",\"lease\":" + lease + "}");
            }
            CompletableFuture<Integer> code = new CompletableFuture<>();
            String how = "";
            try {
                client.checkExists().inBackground((CuratorFramework c, CuratorEvent e) -> code.complete(e.getResultCode())).forPath(node);
                int rc = code.get(periodMs, TimeUnit.MILLISECONDS);
                if (rc != 0 && rc != org.apache.zookeeper.KeeperException.Code.NONODE.intValue())
                    how = ",\"error\":\"unknown\",\"reason\":" + q("exists " + node + ": " + org.apache.zookeeper.KeeperException.Code.get(rc));
            } catch (TimeoutException e) {
                how = ",\"error\":\"unknown\",\"reason\":\"no answer from zookeeper in time\"";
            } catch (Exception e) {
                how = ",\"error\":\"unknown\",\"reason\":" + q(e.toString());
            }
            send("{\"type\":\"renewed\",\"lease\":" + lease + how + "}");
        }
        // The heartbeats of a client whose hello set session_timeout_ms (and heartbeat_ms: 0 for none).
        static Heartbeats start(CuratorFramework client, String hello) {
            String st = field(hello, "session_timeout_ms"), hb = field(hello, "heartbeat_ms");
            long period = hb != null ? Long.parseLong(hb) : (st == null ? 2000 : Long.parseLong(st)) / 3;
            Heartbeats h = new Heartbeats(client, period);
            if (period <= 0) return h;  // none: hold never adds a lease
            Thread t = new Thread(h, "session-heartbeats");
            t.setDaemon(true);
            t.start();
            return h;
        }
    }
    static String q(String s) {  // a JSON string
        StringBuilder b = new StringBuilder("\"");
        for (char c : String.valueOf(s).toCharArray())
            b.append(c == '"' || c == '\\' ? "\\" + c : c < 0x20 ? String.format("\\u%04x", (int) c) : String.valueOf(c));
        return b.append('"').toString();
    }
    // The protocol's requests are flat objects: a field is a string, a number or a boolean.
    static String field(String line, String name) {
        Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*(\"((?:[^\"\\\\]|\\\\.)*)\"|[^,}\\s]+)").matcher(line);
        if (!m.find()) return null;
        return m.group(2) != null ? m.group(2).replaceAll("\\\\(.)", "$1") : m.group(1);
    }
    // A client (not started) of the servers and session timeout the hello names.
    static CuratorFramework client(String hello) {
        Matcher zk = Pattern.compile("\"zookeeper\"\\s*:\\s*\\[([^\\]]*)\\]").matcher(hello);
        String hosts = zk.find() ? zk.group(1).replaceAll("[\"\\s]", "") : "";
        String st = field(hello, "session_timeout_ms");
        int session = st == null ? 2000 : Integer.parseInt(st);  // ZooKeeper bounds it by its tickTime
        return CuratorFrameworkFactory.builder().connectString(hosts).sessionTimeoutMs(session)
            .connectionTimeoutMs(Math.min(session, 2000)).retryPolicy(new ExponentialBackoffRetry(100, 3)).build();
    }
    // The answer to one request, its call run on the worker (the answer's type and fields, no id).
    static String answer(CuratorFramework client, ExecutorService worker, String op, long timeout, Callable<String> call)
            throws InterruptedException {
        try {
            // disconnected: Curator would wait to connect, nothing is sent (not on the worker: it may be busy)
            return "acquire".equals(op) && !client.getZookeeperClient().isConnected()
                ? "\"fail\",\"error\":\"unavailable\",\"reason\":\"not connected to zookeeper\""
                : worker.submit(call).get(timeout, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {  // the call goes on in the background
            return "\"info\",\"reason\":\"no answer from zookeeper in time\"";
        } catch (ExecutionException e) {  // connection loss, session expired: the node may exist or not
            Throwable c = e.getCause();
            return c instanceof IllegalMonitorStateException ? "\"fail\",\"error\":\"not-held\",\"reason\":" + q(c.getMessage())
                : c instanceof IllegalArgumentException ? "\"fail\",\"error\":\"invalid-key\",\"reason\":" + q(c.getMessage())
                : "\"info\",\"reason\":" + q(c.toString());
        }
    }
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String hello = in.readLine();
        String root = Objects.requireNonNullElse(field(hello, "root"), "/locklab/curator");
        CuratorFramework client = client(hello);
        Heartbeats beats = Heartbeats.start(client, hello);
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state != ConnectionState.SUSPENDED && state != ConnectionState.LOST) return;
            for (Long lease : leases.keySet()) {  // SUSPENDED: the session may expire any moment; LOST: it did
                beats.lost(lease);
                if (!lost.containsKey(lease))
                    send("{\"type\":\"lost\",\"lease\":" + lease + ",\"reason\":" + q("curator connection " + state) + "}");
                if (lost.get(lease) != ConnectionState.LOST) lost.put(lease, state);
            }
        });
        client.start();
        client.blockUntilConnected(10, TimeUnit.SECONDS);  // ready either way: calls wait for the connection
        // A fresh JVM's first acquire loads and compiles the recipe's classes: over a case's 1 s acquire timeout
        // when many JVMs start at once (an idle matrix's first runs: every client's first acquire unanswered in
        // 1.2 s, nothing granted). One hold on a path of its own before ready pays for it there.
        try {
            InterProcessMutex warm = new InterProcessMutex(client, root + "-warm-up/" + UUID.randomUUID());
            if (warm.acquire(5, TimeUnit.SECONDS)) warm.release();
        } catch (Exception e) {
            // not connected yet: the requests' own answers will say so
        }
        send("{\"type\":\"ready\",\"protocol\":1}");
        // One thread runs every call: the mutex's reentrancy and ownership are per thread.
        ExecutorService worker = Executors.newSingleThreadExecutor();
        for (String line; (line = in.readLine()) != null; ) {
            String op = field(line, "op"), id = field(line, "id"), lease = field(line, "lease"), key = field(line, "key");
            if ("close".equals(op)) Runtime.getRuntime().halt(0);  // no client.close(): that would delete our nodes
            long timeout = Long.parseLong(Objects.requireNonNullElse(field(line, "timeout_ms"), "5000"));
            boolean wait = "true".equals(field(line, "wait"));
            Callable<String> call = () -> {
                if ("acquire".equals(op)) {
                    Mutex m = mutexes.computeIfAbsent(key, k -> new Mutex(client, root + "/" + k));
                    // 0 ms: one look at the children; either way a node not granted is deleted before false
                    // comes back (a failed delete throws: info). No token: the key's parent is a container
                    // node (creatingParentContainersIfNeeded), deleted by the server once empty, so sequence
                    // numbers restart and a paused holder's old number can exceed a newer holder's.
                    if (!m.acquire(wait ? Math.max(timeout - 300, 0) : 0, TimeUnit.MILLISECONDS))
                        return "\"fail\",\"error\":\"not-acquired\",\"reason\":\"another node is lower\"";
                    leases.put(Long.parseLong(id), m);
                    nodeOf.put(Long.parseLong(id), m.node());
                    return "\"ok\"";
                }
                if ("release".equals(op)) {
                    Mutex m = lease == null ? null : leases.remove(Long.parseLong(lease));
                    if (m == null) return "\"fail\",\"error\":\"not-held\",\"reason\":\"no such lease here\"";
                    beats.drop(Long.parseLong(lease));
                    ConnectionState state = lost.remove(Long.parseLong(lease));
                    m.release();  // deletes the node (a missing node is ignored) when the last hold is given up
                    if (state == ConnectionState.LOST)  // the owning session expired: the node was gone already
                        return "\"fail\",\"error\":\"not-held\",\"reason\":\"session lost while held\"";
                    return "\"ok\"";
                }
                return "\"fail\",\"error\":\"unsupported\",\"reason\":" + q("no " + op + " in InterProcessMutex");
            };
            String ans = answer(client, worker, op, timeout, call);
            send("{\"type\":" + ans + ",\"id\":" + id + "}");
            if ("acquire".equals(op) && ans.startsWith("\"ok\"")) beats.hold(Long.parseLong(id), nodeOf.remove(Long.parseLong(id)));
        }
        Runtime.getRuntime().halt(0);
    }
}
