import { expect, test } from "bun:test";
import { exportedMetricNames, metricNamesInExpr } from "./promql.ts";

test("metric names are found past functions, grouping, matchers, ranges and numbers", () => {
  expect(
    metricNamesInExpr(
      'sum by (application) (rate(http_requests_total{status=~"5..",route="/v1/x"}[$__rate_interval])) / sum by (application) (rate(http_requests_total[5m])) > 14.4 * 0.001 and max(service_ready) == 0',
    ).sort(),
  ).toEqual(["http_requests_total", "service_ready"]);
  expect(
    metricNamesInExpr(
      "histogram_quantile(0.99, sum by (le) (rate(notification_delivery_e2e_delay_seconds_bucket[10m])))",
    ),
  ).toEqual(["notification_delivery_e2e_delay_seconds_bucket"]);
});

test("a histogram on /metrics declares its bucket, sum and count series", () => {
  const names = exportedMetricNames("# HELP a_seconds x\n# TYPE a_seconds histogram\n# TYPE b_total counter\n");
  expect([...names].sort()).toEqual(["a_seconds", "a_seconds_bucket", "a_seconds_count", "a_seconds_sum", "b_total"]);
});
