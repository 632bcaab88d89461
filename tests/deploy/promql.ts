// Metric names in a PromQL expression, and metric names in a Prometheus text exposition: enough PromQL to check that a
// dashboard or an alert only reads metrics the services export (not a full parser: label matchers, strings, grouping
// clauses, durations, numbers, functions and keywords are removed, and what is left are metric names).
const FUNCTIONS_AND_KEYWORDS = new Set([
  "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values", "group",
  "rate", "irate", "increase", "delta", "idelta", "deriv", "histogram_quantile", "abs", "absent", "absent_over_time",
  "ceil", "floor", "round", "clamp", "clamp_min", "clamp_max", "label_replace", "label_join", "vector", "scalar",
  "time", "timestamp", "sort", "sort_desc", "avg_over_time", "max_over_time", "min_over_time", "sum_over_time",
  "count_over_time", "last_over_time", "changes", "resets", "predict_linear",
  "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset",
]); // biome-ignore format: a word list

export function metricNamesInExpr(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, " ") // strings (label values)
    .replace(/\{[^}]*\}/g, " ") // label matchers
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ") // grouping labels
    .replace(/\[[^\]]*\]/g, " ") // range selectors ($__rate_interval, 5m)
    .replace(/\$\w+/g, " "); // dashboard variables
  const names = new Set<string>();
  for (const [word] of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    if (!FUNCTIONS_AND_KEYWORDS.has(word) && !/^(e|inf|nan)$/i.test(word)) names.add(word);
  }
  return [...names];
}

/** Every series name a /metrics page declares (histograms and summaries with their _bucket, _sum and _count). */
export function exportedMetricNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\w+)$/gm)) {
    names.add(name as string);
    if (type === "histogram") for (const s of ["_bucket", "_sum", "_count"]) names.add(`${name}${s}`);
    if (type === "summary") for (const s of ["_sum", "_count"]) names.add(`${name}${s}`);
  }
  return names;
}
