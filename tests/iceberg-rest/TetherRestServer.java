// The Iceberg project's REST catalog (RESTCatalogAdapter and
// RESTCatalogServlet from iceberg-core and iceberg-open-api's test fixtures,
// the code RESTCatalogServer runs) on a JdbcCatalog over an SQLite file and
// a file:// warehouse, bound to one address only: RESTCatalogServer itself
// binds every interface on port 8181. Test tooling for tether's Iceberg
// REST client (tests/e2e/icebergrest.py starts it); no part of tether.
//
//   java -cp JARS:CLASSES TetherRestServer --host 127.0.0.1 --port P
//        --sqlite FILE --warehouse DIR
//        [--token T] [--client-id ID --client-secret S [--token-ttl SECONDS]]
//
// The catalog checks no credentials of its own (its token endpoint hands a
// token to anyone). With --token or --client-id this wrapper checks them in
// front of it: POST /v1/oauth/tokens (client_credentials, the client id
// and secret in the form or HTTP Basic) issues a random bearer token that
// expires after --token-ttl seconds; every other request needs
// "Authorization: Bearer" with --token or an unexpired issued token, else
// 401 in the REST spec's error shape. GET /tether-test/tokens counts the
// tokens issued, so a test can see a refresh. Prints "listening HOST:PORT"
// once it serves.
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.FilterHolder;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public class TetherRestServer {
  static final class Auth implements Filter {
    final String token, clientId, clientSecret;
    final long ttlSeconds;
    final Map<String, Long> issued = new ConcurrentHashMap<>(); // token -> expiry (ms)
    final AtomicInteger count = new AtomicInteger();
    final SecureRandom random = new SecureRandom();

    Auth(String token, String clientId, String clientSecret, long ttlSeconds) {
      this.token = token;
      this.clientId = clientId;
      this.clientSecret = clientSecret;
      this.ttlSeconds = ttlSeconds;
    }

    static void send(HttpServletResponse resp, int status, String json) throws IOException {
      resp.setStatus(status);
      resp.setContentType("application/json");
      resp.getOutputStream().write(json.getBytes(StandardCharsets.UTF_8));
    }

    static Map<String, String> form(String body) {
      Map<String, String> out = new HashMap<>();
      for (String pair : body.split("&")) {
        int eq = pair.indexOf('=');
        if (eq > 0)
          out.put(URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
              URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
      }
      return out;
    }

    void issue(HttpServletRequest req, HttpServletResponse resp) throws IOException {
      Map<String, String> f = form(new String(req.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
      String id = f.get("client_id"), secret = f.get("client_secret");
      String basic = req.getHeader("Authorization");
      if (basic != null && basic.startsWith("Basic ")) {
        String pair = new String(Base64.getDecoder().decode(basic.substring(6)), StandardCharsets.UTF_8);
        int colon = pair.indexOf(':');
        if (colon > 0) {
          id = URLDecoder.decode(pair.substring(0, colon), StandardCharsets.UTF_8);
          secret = URLDecoder.decode(pair.substring(colon + 1), StandardCharsets.UTF_8);
        }
      }
      if (!"client_credentials".equals(f.get("grant_type")) || clientId == null || !clientId.equals(id)
          || !clientSecret.equals(secret)) {
        send(resp, 401, "{\"error\":\"invalid_client\",\"error_description\":\"unknown client or wrong secret\"}");
        return;
      }
      byte[] raw = new byte[24];
      random.nextBytes(raw);
      String t = Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
      issued.put(t, System.currentTimeMillis() + ttlSeconds * 1000);
      count.incrementAndGet();
      send(resp, 200, "{\"access_token\":\"" + t + "\",\"token_type\":\"bearer\",\"expires_in\":" + ttlSeconds
          + ",\"issued_token_type\":\"urn:ietf:params:oauth:token-type:access_token\"}");
    }

    boolean allowed(HttpServletRequest req) {
      String h = req.getHeader("Authorization");
      if (h == null || !h.startsWith("Bearer "))
        return false;
      String t = h.substring(7);
      if (token != null && token.equals(t))
        return true;
      Long expiry = issued.get(t);
      return expiry != null && System.currentTimeMillis() < expiry;
    }

    @Override
    public void doFilter(ServletRequest sreq, ServletResponse sresp, FilterChain chain)
        throws IOException, ServletException {
      HttpServletRequest req = (HttpServletRequest) sreq;
      HttpServletResponse resp = (HttpServletResponse) sresp;
      String path = req.getRequestURI();
      if (path.equals("/tether-test/tokens")) {
        send(resp, 200, "{\"issued\":" + count.get() + "}");
      } else if (path.equals("/v1/oauth/tokens") && "POST".equals(req.getMethod())) {
        issue(req, resp);
      } else if (allowed(req)) {
        chain.doFilter(sreq, sresp);
      } else {
        send(resp, 401, "{\"error\":{\"message\":\"Not authorized: no valid bearer token\","
            + "\"type\":\"NotAuthorizedException\",\"code\":401}}");
      }
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opt = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--"))
        throw new IllegalArgumentException("bad argument " + args[i]);
      opt.put(args[i].substring(2), args[i + 1]);
    }
    String host = opt.getOrDefault("host", "127.0.0.1");
    int port = Integer.parseInt(opt.get("port"));

    Map<String, String> props = new HashMap<>();
    props.put(CatalogProperties.URI, "jdbc:sqlite:" + opt.get("sqlite"));
    props.put(CatalogProperties.WAREHOUSE_LOCATION, "file://" + opt.get("warehouse"));
    props.put("jdbc.schema-version", "V1");
    // One connection: SQLite takes one writer at a time, and racing commits
    // must meet the catalog's own check, not SQLITE_BUSY.
    props.put(CatalogProperties.CLIENT_POOL_SIZE, "1");
    JdbcCatalog catalog = new JdbcCatalog();
    catalog.setConf(new Configuration());
    catalog.initialize("tether_rest", props);

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(host);
    connector.setPort(port);
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.setContextPath("/");
    context.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTCatalogAdapter(catalog))), "/*");
    if (opt.containsKey("token") || opt.containsKey("client-id")) {
      Auth auth = new Auth(opt.get("token"), opt.get("client-id"), opt.getOrDefault("client-secret", ""),
          Long.parseLong(opt.getOrDefault("token-ttl", "3600")));
      context.addFilter(new FilterHolder(auth), "/*", EnumSet.of(jakarta.servlet.DispatcherType.REQUEST));
    }
    server.setHandler(context);
    server.start();
    System.out.println("listening " + host + ":" + connector.getLocalPort());
    System.out.flush();
    server.join();
  }
}
