//! [`OutOfLine`]: the box of `Value`'s rare, recursive variants (an array, a record),
//! whose drop is one call out of line.
//!
//! `Value` is recursive through its arrays and records, so a plain `Box<Array>` made
//! `Value`'s drop glue a recursive function with a loop in it, which saves and restores
//! five registers at every call whatever the variant: ~10 instructions per dropped
//! integer, ~370 per prepared INSERT + COMMIT (callgrind, `commit_loop`). Behind
//! `ManuallyDrop` and an out-of-line `Drop`, the glue of the other variants is what it was
//! before arrays.

use std::mem::ManuallyDrop;

pub struct OutOfLine<T>(ManuallyDrop<Box<T>>);

impl<T> OutOfLine<T> {
    pub fn new(value: T) -> OutOfLine<T> {
        OutOfLine(ManuallyDrop::new(Box::new(value)))
    }

    /// The value, out of its box.
    pub fn into_inner(self) -> T {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again (ManuallyDrop), so the box is
        // taken exactly once.
        *unsafe { ManuallyDrop::take(&mut this.0) }
    }
}

impl<T> Drop for OutOfLine<T> {
    #[inline]
    fn drop(&mut self) {
        drop_out_of_line(self);
    }
}

#[inline(never)]
#[cold]
fn drop_out_of_line<T>(boxed: &mut OutOfLine<T>) {
    // SAFETY: called once, from `OutOfLine::drop`; the box is not used after it.
    unsafe { ManuallyDrop::drop(&mut boxed.0) }
}

impl<T: Clone> Clone for OutOfLine<T> {
    fn clone(&self) -> OutOfLine<T> {
        OutOfLine::new(T::clone(self))
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for OutOfLine<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        T::fmt(self, f)
    }
}

impl<T> std::ops::Deref for OutOfLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for OutOfLine<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boxed_value_is_read_changed_taken_out_and_dropped_once() {
        use std::rc::Rc;
        let counted = Rc::new(());
        let mut boxed = OutOfLine::new(vec![Rc::clone(&counted)]);
        boxed.push(Rc::clone(&counted));
        let copy = boxed.clone();
        assert_eq!((boxed.len(), Rc::strong_count(&counted)), (2, 5));
        drop(copy);
        assert_eq!(Rc::strong_count(&counted), 3);
        let inner = boxed.into_inner();
        assert_eq!(Rc::strong_count(&counted), 3, "taken out, not dropped");
        drop(inner);
        assert_eq!(Rc::strong_count(&counted), 1);
    }
}
