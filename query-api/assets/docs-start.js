// Starts Swagger UI on /docs over svc's OpenAPI document. Served as a file: the page's
// Content-Security-Policy allows no inline script. Namespaces start collapsed: the
// document has some two hundred operations, and a reader opens the namespace they need.
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  docExpansion: "none",
});
