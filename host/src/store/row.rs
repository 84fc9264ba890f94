//! [`from_row!`]: a struct of named columns and its `sqlx::FromRow`, on both databases.
//!
//! What `#[derive(sqlx::FromRow)]` generates, for the shapes the store uses (fields read by
//! their own names, and one leading `..field` read from the same row, the derive's `flatten`),
//! without sqlx's proc-macro crate: that crate links sqlx's drivers, so a cold build compiled
//! sqlx and SQLite twice, once for the compiler (issue 59, BENCHMARKS.md "First build").

/// ```ignore
/// from_row! {
///     pub(super) struct ClaimedRow {
///         ..file: FileRow,
///         content: Vec<u8>,
///     }
/// }
/// ```
macro_rules! from_row {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(.. $flat:ident : $flat_ty:ty,)?
            $($(#[$field_meta:meta])* $field_vis:vis $field:ident : $ty:ty),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $($flat: $flat_ty,)?
            $($(#[$field_meta])* $field_vis $field: $ty,)*
        }

        impl<'r, R: ::sqlx::Row> ::sqlx::FromRow<'r, R> for $name
        where
            &'static str: ::sqlx::ColumnIndex<R>,
            $($flat_ty: ::sqlx::FromRow<'r, R>,)?
            $($ty: ::sqlx::Decode<'r, R::Database> + ::sqlx::Type<R::Database>,)*
        {
            fn from_row(row: &'r R) -> ::std::result::Result<Self, ::sqlx::Error> {
                Ok(Self {
                    $($flat: <$flat_ty as ::sqlx::FromRow<'r, R>>::from_row(row)?,)?
                    $($field: row.try_get(stringify!($field))?,)*
                })
            }
        }
    };
}
pub(super) use from_row;

#[cfg(test)]
mod tests {
    use sqlx::Connection as _;

    from_row! {
        #[derive(Debug, PartialEq)]
        struct Inner {
            a: String,
            /// A column that may be NULL.
            b: Option<i64>,
        }
    }

    from_row! {
        #[derive(Debug, PartialEq)]
        struct Outer {
            ..inner: Inner,
            c: bool,
        }
    }

    #[tokio::test]
    async fn fields_are_read_by_name_and_flattened_from_the_same_row() {
        let mut db = sqlx::SqliteConnection::connect("sqlite::memory:")
            .await
            .unwrap();
        let row: Outer = sqlx::query_as("SELECT 1 = 1 AS c, NULL AS b, 'x' AS a")
            .fetch_one(&mut db)
            .await
            .unwrap();
        let a = String::from("x");
        assert_eq!(
            row,
            Outer {
                inner: Inner { a, b: None },
                c: true
            }
        );
        let missing = sqlx::query_as::<_, Outer>("SELECT 'x' AS a, 1 AS b")
            .fetch_one(&mut db)
            .await;
        assert!(matches!(missing, Err(sqlx::Error::ColumnNotFound(c)) if c == "c"));
    }
}
