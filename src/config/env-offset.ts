/**
 * Where the `${` at `index` of a value after YAML parsing sits in the
 * value's source text `raw`, so an env problem points at the reference
 * itself: the n-th unescaped `${` of the value is the n-th unescaped `${` of
 * the source. 0 when it cannot be found.
 */
export function envReferenceOffset(raw: string, value: string, index: number): number {
  const ordinal = referenceStarts(value.slice(0, index)).length
  return referenceStarts(raw)[ordinal] ?? 0
}

/** Where each `${` of `text` starts, leaving out the escaped `$${`. */
function referenceStarts(text: string): number[] {
  const starts: number[] = []
  for (let i = 0; i < text.length - 1; i++) {
    if (text.startsWith('$${', i)) {
      i += 2
      continue
    }
    if (text.startsWith('${', i)) starts.push(i)
  }
  return starts
}
