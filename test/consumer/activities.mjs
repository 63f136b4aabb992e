// The team's own activities.
export async function greet(name) {
  return `hello, ${name}`;
}
