// GET /list?prefix=P lists every key of ORDERS that starts with P as
// [{"name":…,"expiration":…}], as `wrangler kv key list` prints them;
// PUT /put?key=K stores the request's body under K, as `wrangler kv key
// put` does. Test use only (test/main_test.go).
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/list") {
      const keys = [];
      let cursor;
      do {
        const page = await env.ORDERS.list({ prefix: url.searchParams.get("prefix") ?? "", cursor });
        for (const k of page.keys) keys.push({ name: k.name, expiration: k.expiration });
        cursor = page.list_complete ? undefined : page.cursor;
      } while (cursor);
      return Response.json(keys);
    }
    if (request.method === "PUT" && url.pathname === "/put" && url.searchParams.has("key")) {
      await env.ORDERS.put(url.searchParams.get("key"), await request.text());
      return new Response(null, { status: 204 });
    }
    return new Response("not found", { status: 404 });
  },
};
