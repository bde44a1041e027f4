// A Worker in front of the OMS, as an operator would bind it to the
// edge-orders Worker as the service OMS. For TestServiceBindingWinsOverURL
// it forwards each call to the test's fake OMS (the UPSTREAM var), marked
// as having come through the binding.
export default {
  async fetch(request, env) {
    const headers = new Headers(request.headers);
    headers.set("X-Via", "service-binding");
    return fetch(env.UPSTREAM, { method: request.method, headers, body: await request.text() });
  },
};
